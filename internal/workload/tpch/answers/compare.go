package answers

import (
	"fmt"
	"math/big"
	"strings"
)

// class is how a column is compared (clause 2.1.3.5; see the package doc).
type class int

const (
	str      class = iota // strings and dates: exact after trimming trailing blanks
	integer               // "int": keys and other integer values, exact
	cnt                   // COUNT results, exact
	num                   // singleton numeric values: exact after rounding to 1/100
	exactSum              // SUM(l_quantity) of Q1 and Q18: exact
	sum                   // within $100
	avg                   // within 1% after rounding to 1/100
	rat                   // within 1% after rounding to 1/100
)

func (c class) rule() string {
	switch c {
	case str:
		return "str, exact"
	case integer:
		return "int, exact"
	case cnt:
		return "cnt, exact"
	case num:
		return "num, exact to 1/100"
	case exactSum:
		return "sum of quantities, exact"
	case sum:
		return "sum, within $100"
	case avg:
		return "avg, within 1%"
	case rat:
		return "rat, within 1%"
	}
	return "unknown"
}

// columnClasses per query, from the TPC's dbgen/check_answers/colprecision.txt,
// with clause 2.1.3.5's exceptions: SUM(l_quantity) in Q1 (column 3) and
// Q18 (column 6) is exact, Q12's two sums of 0/1 are counts. Q15's
// total_revenue is already a sum there.
var columnClasses = [Queries + 1][]class{
	1:  {str, str, exactSum, sum, sum, sum, avg, avg, avg, cnt},
	2:  {num, str, str, integer, str, str, str, str},
	3:  {integer, sum, str, integer},
	4:  {str, cnt},
	5:  {str, sum},
	6:  {sum},
	7:  {str, str, integer, sum},
	8:  {integer, rat},
	9:  {str, integer, sum},
	10: {integer, str, sum, num, str, str, str, str},
	11: {integer, sum},
	12: {str, cnt, cnt},
	13: {cnt, cnt},
	14: {rat},
	15: {integer, str, str, str, sum},
	16: {str, str, num, cnt},
	17: {avg},
	18: {str, integer, integer, str, num, exactSum},
	19: {sum},
	20: {str, str},
	21: {str, cnt},
	22: {num, cnt, sum},
}

// partialOrder lists, for the queries whose ORDER BY does not order every
// row, the output columns (0-based) of the ORDER BY: reference rows equal
// on all of them form a group compared as a multiset. All other queries
// order completely (by their grouping keys or a unique column).
var partialOrder = map[int][]int{
	3:  {1, 2}, // revenue desc, o_orderdate
	5:  {1},    // revenue desc
	10: {2},    // revenue desc
	11: {1},    // value desc
	18: {4, 3}, // o_totalprice desc, o_orderdate
}

// Columns returns the number of columns of query q's result, 0 if q is not
// 1..22.
func Columns(q int) int {
	if q < 1 || q > Queries {
		return 0
	}
	return len(columnClasses[q])
}

const noRow = "no row"

// MismatchError is a result that does not match the reference answer. Its
// message is one line, e.g.
//
//	Q3 row 4 column revenue: expected 370560.54 (sum, within $100), got 371002.11
type MismatchError struct {
	Query    int
	Row      int    // 1-based
	Column   string // column name; empty when the row as a whole is wrong
	Expected string // the reference value, or "no row"
	Got      string // the value received, or "no row"
	Rule     string // how the column is compared
	Note     string // more: row counts, why a value is unreadable
}

func (e *MismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Q%d row %d", e.Query, e.Row)
	if e.Column != "" {
		fmt.Fprintf(&b, " column %s", e.Column)
	}
	b.WriteString(": expected ")
	if e.Expected == noRow || e.Rule == "" {
		b.WriteString(e.Expected)
	} else {
		fmt.Fprintf(&b, "%s (%s)", e.Expected, e.Rule)
	}
	fmt.Fprintf(&b, ", got %s", e.Got)
	if e.Note != "" {
		fmt.Fprintf(&b, "; %s", e.Note)
	}
	return b.String()
}

// Compare checks got, query q's result rows as PostgreSQL returns them in
// text format, against ref by clause 2.1.3.5 (see the package doc). It
// returns nil when they match, a *MismatchError naming the first row and
// column that does not, or another error if q or ref is unusable.
func Compare(q int, ref Answer, got [][]string) error {
	if q < 1 || q > Queries {
		return fmt.Errorf("no such TPC-H query: Q%d", q)
	}
	classes := columnClasses[q]
	if len(ref.Columns) != len(classes) {
		return fmt.Errorf("reference answer for Q%d has %d columns, the query has %d", q, len(ref.Columns), len(classes))
	}
	c := comparer{q: q, ref: ref, got: got, classes: classes}
	if len(got) != len(ref.Rows) {
		c.note = fmt.Sprintf("%d rows, expected %d", len(got), len(ref.Rows))
	}
	n := min(len(got), len(ref.Rows))
	for i := range got {
		if len(got[i]) != len(classes) {
			return &MismatchError{Query: q, Row: i + 1,
				Expected: fmt.Sprintf("%d columns", len(classes)), Got: fmt.Sprintf("%d columns", len(got[i])), Note: c.note}
		}
	}
	keys, partial := partialOrder[q]
	for start := 0; start < n; {
		end := start + 1
		if partial {
			for end < len(ref.Rows) && sameKeys(ref.Rows[start], ref.Rows[end], keys) {
				end++
			}
		}
		if end > n { // a tie group cut short by a missing row: compare what is there in order
			end = start + 1
		}
		if err := c.group(start, end); err != nil {
			return err
		}
		start = end
	}
	switch {
	case len(got) < len(ref.Rows):
		return &MismatchError{Query: q, Row: n + 1, Column: ref.Columns[0],
			Expected: ref.Rows[n][0], Rule: classes[0].rule(), Got: noRow, Note: c.note}
	case len(got) > len(ref.Rows):
		return &MismatchError{Query: q, Row: n + 1, Column: ref.Columns[0],
			Expected: noRow, Got: got[n][0], Note: c.note}
	}
	return nil
}

type comparer struct {
	q       int
	ref     Answer
	got     [][]string
	classes []class
	note    string
}

// group compares reference rows [start, end) with got rows [start, end) as
// a multiset (in order when it is one row).
func (c *comparer) group(start, end int) error {
	if end-start == 1 {
		return c.row(start, start)
	}
	used := make([]bool, end-start)
	for i := start; i < end; i++ {
		found := false
		for j := start; j < end; j++ {
			if !used[j-start] && c.row(i, j) == nil {
				used[j-start], found = true, true
				break
			}
		}
		if found {
			continue
		}
		// Report against the got row in the same place if it is still
		// free, else the first free one.
		j := i
		if used[j-start] {
			for j = start; used[j-start]; j++ {
			}
		}
		err := c.row(i, j)
		if m, ok := err.(*MismatchError); ok {
			m.Row = i + 1
			extra := fmt.Sprintf("rows %d-%d tie on the ORDER BY and may come in any order", start+1, end)
			if m.Note == "" {
				m.Note = extra
			} else {
				m.Note = extra + "; " + m.Note
			}
		}
		return err
	}
	return nil
}

// row compares reference row i with got row j.
func (c *comparer) row(i, j int) error {
	for k, cl := range c.classes {
		want, have := c.ref.Rows[i][k], c.got[j][k]
		if ok, why := match(cl, want, have); !ok {
			note := why
			if c.note != "" {
				if note != "" {
					note += "; "
				}
				note += c.note
			}
			return &MismatchError{Query: c.q, Row: i + 1, Column: c.ref.Columns[k],
				Expected: shown(want), Got: shown(have), Rule: cl.rule(), Note: note}
		}
	}
	return nil
}

func shown(v string) string {
	if isNull(v) {
		return "NULL"
	}
	return v
}

func sameKeys(a, b []string, keys []int) bool {
	for _, k := range keys {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}

// isNull: SQL NULL is stored as the empty string; a caller may also pass
// "NULL". Only numeric columns are read this way.
func isNull(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || strings.EqualFold(v, "null")
}

var (
	hundred    = big.NewRat(100, 1)
	half       = big.NewRat(1, 2)
	lowFactor  = big.NewRat(99, 100)
	highFactor = big.NewRat(101, 100)
)

// match compares one reference value with one received value; why says
// what went wrong beyond the values themselves.
func match(cl class, want, have string) (ok bool, why string) {
	if cl == str {
		return strings.TrimRight(want, " ") == strings.TrimRight(have, " "), ""
	}
	if isNull(want) || isNull(have) {
		return isNull(want) && isNull(have), ""
	}
	v, okv := parseNumber(want)
	if !okv {
		return false, "reference value is not a number"
	}
	r, okr := parseNumber(have)
	if !okr {
		return false, "not a number"
	}
	switch cl {
	case integer, cnt, exactSum:
		return v.Cmp(r) == 0, ""
	case num:
		return v.Cmp(round2(r)) == 0, ""
	case sum:
		d := new(big.Rat).Sub(r, v)
		return d.Abs(d).Cmp(hundred) <= 0, ""
	case avg, rat:
		lo := new(big.Rat).Mul(v, lowFactor)
		hi := new(big.Rat).Mul(v, highFactor)
		if v.Sign() < 0 {
			lo, hi = hi, lo
		}
		rr := round2(r)
		return rr.Cmp(lo) >= 0 && rr.Cmp(hi) <= 0, ""
	}
	return false, "unknown column class"
}

func parseNumber(s string) (*big.Rat, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "/") { // big.Rat would take "1/3"
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// round2 rounds to 1/100, halves away from zero.
func round2(x *big.Rat) *big.Rat {
	y := new(big.Rat).Mul(x, hundred)
	neg := y.Sign() < 0
	y.Abs(y)
	y.Add(y, half)
	n := new(big.Int).Quo(y.Num(), y.Denom()) // floor, y ≥ 0
	if neg {
		n.Neg(n)
	}
	return new(big.Rat).SetFrac(n, big.NewInt(100))
}
