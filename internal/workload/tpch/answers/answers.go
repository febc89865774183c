package answers

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// Queries is the number of TPC-H queries.
const Queries = 22

// Answer is one query's result: column names and rows of values as text.
type Answer struct {
	Columns []string
	Rows    [][]string
}

//go:embed data
var data embed.FS

// scale is one stored answer set.
type scale struct {
	sf   float64
	file string

	once    sync.Once
	answers []Answer // index q-1
	err     error
}

var scales = []*scale{
	{sf: 0.01, file: "data/sf0.01.txt"},
	{sf: 0.1, file: "data/sf0.1.txt.gz"},
	{sf: 1, file: "data/sf1.txt.gz"},
}

// Scales returns the scale factors that have reference answers, ascending.
func Scales() []float64 {
	out := make([]float64, len(scales))
	for i, s := range scales {
		out[i] = s.sf
	}
	return out
}

// Reference returns the reference answer of query q (1..22) at scale factor
// sf with the validation parameters, or false when there is none: q out of
// range or no stored answers for sf (only 0.01, 0.1 and 1, matched with a
// relative tolerance of 1e-6). The answer is the caller's copy.
func Reference(sf float64, q int) (Answer, bool) {
	if q < 1 || q > Queries {
		return Answer{}, false
	}
	s := lookup(sf)
	if s == nil {
		return Answer{}, false
	}
	all, err := s.load()
	if err != nil {
		// The embedded data is checked by the tests; a failure here is a
		// broken build, not a condition callers could handle.
		panic(err)
	}
	return all[q-1].clone(), true
}

func lookup(sf float64) *scale {
	for _, s := range scales {
		if math.Abs(sf-s.sf) <= 1e-6*s.sf {
			return s
		}
	}
	return nil
}

func (s *scale) load() ([]Answer, error) {
	s.once.Do(func() {
		raw, err := data.ReadFile(s.file)
		if err != nil {
			s.err = err
			return
		}
		if strings.HasSuffix(s.file, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				s.err = fmt.Errorf("%s: %w", s.file, err)
				return
			}
			raw, err = io.ReadAll(zr)
			if err != nil {
				s.err = fmt.Errorf("%s: %w", s.file, err)
				return
			}
		}
		s.answers, s.err = parse(string(raw))
		if s.err != nil {
			s.err = fmt.Errorf("%s: %w", s.file, s.err)
		}
	})
	return s.answers, s.err
}

// parse reads the stored form (see the package doc): comment lines, then
// per query "Q<n>|<rows>", the column names and the rows.
func parse(text string) ([]Answer, error) {
	lines := strings.Split(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "#") {
		i++
	}
	out := make([]Answer, 0, Queries)
	for q := 1; q <= Queries; q++ {
		if i >= len(lines) {
			return nil, fmt.Errorf("no section for Q%d", q)
		}
		head := strings.Split(lines[i], "|")
		if len(head) != 2 || head[0] != "Q"+strconv.Itoa(q) {
			return nil, fmt.Errorf("line %d: want the heading of Q%d, have %q", i+1, q, lines[i])
		}
		n, err := strconv.Atoi(head[1])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("line %d: bad row count %q", i+1, head[1])
		}
		if i+1+n >= len(lines) {
			return nil, fmt.Errorf("section Q%d: file ends before its %d rows", q, n)
		}
		a := Answer{Columns: strings.Split(lines[i+1], "|"), Rows: make([][]string, n)}
		for r := range n {
			a.Rows[r] = strings.Split(lines[i+2+r], "|")
			if len(a.Rows[r]) != len(a.Columns) {
				return nil, fmt.Errorf("section Q%d row %d: %d values for %d columns", q, r+1, len(a.Rows[r]), len(a.Columns))
			}
		}
		out = append(out, a)
		i += 2 + n
	}
	if i != len(lines) {
		return nil, fmt.Errorf("line %d: unexpected text after Q%d", i+1, Queries)
	}
	return out, nil
}

func (a Answer) clone() Answer {
	c := Answer{Columns: append([]string(nil), a.Columns...), Rows: make([][]string, len(a.Rows))}
	for i, r := range a.Rows {
		c.Rows[i] = append([]string(nil), r...)
	}
	return c
}
