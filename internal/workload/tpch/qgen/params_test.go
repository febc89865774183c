package qgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The validation parameters of TPC.md 2.1 (qgen -d), typed in from that
// table; Q11's fraction at SF 1 is 0.0001.
var tpcMDValidation = map[int][]string{
	1:  {"90"},
	2:  {"15", "BRASS", "EUROPE"},
	3:  {"BUILDING", "1995-03-15"},
	4:  {"1993-07-01"},
	5:  {"ASIA", "1994-01-01"},
	6:  {"1994-01-01", ".06", "24"},
	7:  {"FRANCE", "GERMANY"},
	8:  {"BRAZIL", "AMERICA", "ECONOMY ANODIZED STEEL"},
	9:  {"green"},
	10: {"1993-10-01"},
	11: {"GERMANY", "0.0001"},
	12: {"MAIL", "SHIP", "1994-01-01"},
	13: {"special", "requests"},
	14: {"1995-09-01"},
	15: {"1996-01-01"},
	16: {"Brand#45", "MEDIUM POLISHED", "49", "14", "23", "45", "19", "3", "36", "9"},
	17: {"Brand#23", "MED BOX"},
	18: {"300"},
	19: {"Brand#12", "Brand#23", "Brand#34", "1", "10", "20"},
	20: {"forest", "1994-01-01", "CANADA"},
	21: {"SAUDI ARABIA"},
	22: {"13", "31", "23", "29", "30", "18", "17"},
}

func TestValidationParams(t *testing.T) {
	for n := 1; n <= 22; n++ {
		q := Validation(n, 1)
		want := tpcMDValidation[n]
		if q.N != n {
			t.Errorf("Validation(%d).N = %d", n, q.N)
		}
		if n == 11 {
			// The fraction is compared as a number: qgen prints "%11.10f".
			if len(q.Params) != 2 || q.Params[0] != want[0] {
				t.Errorf("Q11 params %q, want %q", q.Params, want)
				continue
			}
			if f, err := strconv.ParseFloat(q.Params[1], 64); err != nil || f != 0.0001 {
				t.Errorf("Q11 fraction %q, want 0.0001", q.Params[1])
			}
			continue
		}
		if !slices.Equal(q.Params, want) {
			t.Errorf("Validation(%d) params %q, want %q", n, q.Params, want)
		}
	}
}

func TestValidationQ11Fraction(t *testing.T) {
	cases := map[float64]string{
		1:    "0.0001000000",
		10:   "0.0000100000",
		100:  "0.0000010000",
		0.01: "0.0100000000",
		3:    "0.0000333333",
	}
	for sf, want := range cases {
		if got := Validation(11, sf).Params[1]; got != want {
			t.Errorf("Q11 fraction at SF %v = %q, want %q", sf, got, want)
		}
		if !strings.Contains(Validation(11, sf).SQL, "* "+want+"\n") {
			t.Errorf("Q11 SQL at SF %v lacks the fraction %s", sf, want)
		}
	}
}

func TestQueryNames(t *testing.T) {
	want := map[int]string{1: "Pricing Summary Report", 15: "Top Supplier", 16: "Parts/Supplier Relationship", 22: "Global Sales Opportunity"}
	for n, name := range want {
		if got := Validation(n, 1).Name; got != name {
			t.Errorf("Q%d name %q, want %q", n, got, name)
		}
	}
	for n := 1; n <= 22; n++ {
		if Validation(n, 1).Name == "" {
			t.Errorf("Q%d has no name", n)
		}
	}
}

func TestBadArgumentsPanic(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"n=0", func() { Validation(0, 1) }},
		{"n=23", func() { Random(23, 1, NewRand(1)) }},
		{"sf=0", func() { Validation(1, 0) }},
		{"sf<0", func() { Random(1, -1, NewRand(1)) }},
		{"nil rng", func() { Random(1, 1, nil) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", c.name)
				}
			}()
			c.f()
		}()
	}
}

// The regions of the 25 nations (the NATION table of the specification,
// clause 4.2.3), grouped by region.
var regionOf = func() map[string]string {
	m := map[string]string{}
	for region, names := range map[string][]string{
		"AFRICA":      {"ALGERIA", "ETHIOPIA", "KENYA", "MOROCCO", "MOZAMBIQUE"},
		"AMERICA":     {"ARGENTINA", "BRAZIL", "CANADA", "PERU", "UNITED STATES"},
		"ASIA":        {"INDIA", "INDONESIA", "JAPAN", "CHINA", "VIETNAM"},
		"EUROPE":      {"FRANCE", "GERMANY", "ROMANIA", "RUSSIA", "UNITED KINGDOM"},
		"MIDDLE EAST": {"EGYPT", "IRAN", "IRAQ", "JORDAN", "SAUDI ARABIA"},
	} {
		for _, n := range names {
			m[n] = region
		}
	}
	return m
}()

var (
	testSyl1     = []string{"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"}
	testSyl2     = []string{"ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"}
	testSyl3     = []string{"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"}
	testSegments = []string{"AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"}
	testModes    = []string{"REG AIR", "AIR", "RAIL", "TRUCK", "MAIL", "FOB", "SHIP"}
	testRegions  = []string{"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"}
	testCntr1    = []string{"SM", "LG", "MED", "JUMBO", "WRAP"}
	testCntr2    = []string{"CASE", "BOX", "BAG", "JAR", "PACK", "PKG", "CAN", "DRUM"}
)

// checker collects range violations and the values seen.
type checker struct {
	t    *testing.T
	q    Query
	seen map[string]map[string]bool
}

func (c *checker) fail(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf("Q%d %q: %s", c.q.N, c.q.Params, fmt.Sprintf(format, args...))
}

func (c *checker) note(key, value string) {
	if c.seen[key] == nil {
		c.seen[key] = map[string]bool{}
	}
	c.seen[key][value] = true
}

func (c *checker) intIn(s string, lo, hi int) int {
	c.t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi || strconv.Itoa(v) != s {
		c.fail("%q is not an integer in [%d, %d]", s, lo, hi)
	}
	return v
}

func (c *checker) in(s string, list []string) {
	c.t.Helper()
	if !slices.Contains(list, s) {
		c.fail("%q is not one of %q", s, list)
	}
}

func (c *checker) nation(s string) {
	c.t.Helper()
	if _, ok := regionOf[s]; !ok {
		c.fail("%q is not a nation", s)
	}
}

// date checks a date in [lo, hi]; firstOf is "" (any day), "month" or "year".
func (c *checker) date(s, lo, hi, firstOf string) {
	c.t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	if err != nil || d.Format(time.DateOnly) != s || s < lo || s > hi {
		c.fail("%q is not a date in [%s, %s]", s, lo, hi)
		return
	}
	if (firstOf == "month" && d.Day() != 1) || (firstOf == "year" && (d.Day() != 1 || d.Month() != 1)) {
		c.fail("%q is not the first of a %s", s, firstOf)
	}
}

func (c *checker) brand(s string) {
	c.t.Helper()
	if len(s) != 8 || !strings.HasPrefix(s, "Brand#") || s[6] < '1' || s[6] > '5' || s[7] < '1' || s[7] > '5' {
		c.fail("%q is not Brand#MN with M, N in 1..5", s)
	}
}

func (c *checker) count(k int) bool {
	c.t.Helper()
	if len(c.q.Params) != k {
		c.fail("%d parameters, want %d", len(c.q.Params), k)
		return false
	}
	return true
}

// check verifies q's parameters against the ranges of TPC.md 2.1 and
// varsub.c.
func (c *checker) check(sf float64) {
	c.t.Helper()
	p := c.q.Params
	switch c.q.N {
	case 1:
		if c.count(1) {
			c.intIn(p[0], 60, 120)
			c.note("q1", p[0])
		}
	case 2:
		if c.count(3) {
			c.intIn(p[0], 1, 50)
			c.in(p[1], testSyl3)
			c.in(p[2], testRegions)
		}
	case 3:
		if c.count(2) {
			c.in(p[0], testSegments)
			c.date(p[1], "1995-03-01", "1995-03-31", "")
			c.note("q3", p[1])
		}
	case 4, 15:
		if c.count(1) {
			c.date(p[0], "1993-01-01", "1997-10-01", "month")
			c.note(fmt.Sprint("q", c.q.N), p[0])
		}
	case 5:
		if c.count(2) {
			c.in(p[0], testRegions)
			c.date(p[1], "1993-01-01", "1997-01-01", "year")
		}
	case 6:
		if c.count(3) {
			c.date(p[0], "1993-01-01", "1997-01-01", "year")
			c.in(p[1], []string{"0.02", "0.03", "0.04", "0.05", "0.06", "0.07", "0.08", "0.09"})
			c.in(p[2], []string{"24", "25"})
			c.note("q6", p[1])
		}
	case 7:
		if c.count(2) {
			c.nation(p[0])
			c.nation(p[1])
			if p[0] == p[1] {
				c.fail("the two nations are the same")
			}
		}
	case 8:
		if c.count(3) {
			c.nation(p[0])
			if regionOf[p[0]] != p[1] {
				c.fail("region %q is not %s's region %q", p[1], p[0], regionOf[p[0]])
			}
			w := strings.Split(p[2], " ")
			if len(w) != 3 {
				c.fail("type %q has not three syllables", p[2])
			} else {
				c.in(w[0], testSyl1)
				c.in(w[1], testSyl2)
				c.in(w[2], testSyl3)
			}
		}
	case 9:
		if c.count(1) {
			c.in(p[0], colors)
			c.note("color", p[0])
		}
	case 10:
		if c.count(1) {
			c.date(p[0], "1993-02-01", "1995-01-01", "month")
			c.note("q10", p[0])
		}
	case 11:
		if c.count(2) {
			c.nation(p[0])
			if p[1] != strconv.FormatFloat(0.0001/sf, 'f', 10, 64) {
				c.fail("fraction %q is not 0.0001/%v", p[1], sf)
			}
		}
	case 12:
		if c.count(3) {
			c.in(p[0], testModes)
			c.in(p[1], testModes)
			if p[0] == p[1] {
				c.fail("the two ship modes are the same")
			}
			c.date(p[2], "1993-01-01", "1997-01-01", "year")
		}
	case 13:
		if c.count(2) {
			c.in(p[0], []string{"special", "pending", "unusual", "express"})
			c.in(p[1], []string{"packages", "requests", "accounts", "deposits"})
			c.note("q13", p[0]+" "+p[1])
		}
	case 14:
		if c.count(1) {
			c.date(p[0], "1993-01-01", "1997-12-01", "month")
			c.note("q14", p[0])
		}
	case 16:
		if c.count(10) {
			c.brand(p[0])
			w := strings.Split(p[1], " ")
			if len(w) != 2 {
				c.fail("type %q has not two syllables", p[1])
			} else {
				c.in(w[0], testSyl1)
				c.in(w[1], testSyl2)
			}
			sizes := map[string]bool{}
			for _, s := range p[2:] {
				c.intIn(s, 1, 50)
				sizes[s] = true
				c.note("q16size", s)
			}
			if len(sizes) != 8 {
				c.fail("sizes not 8 distinct values")
			}
		}
	case 17:
		if c.count(2) {
			c.brand(p[0])
			w := strings.Split(p[1], " ")
			if len(w) != 2 {
				c.fail("container %q has not two words", p[1])
			} else {
				c.in(w[0], testCntr1)
				c.in(w[1], testCntr2)
			}
			c.note("q17brand", p[0])
		}
	case 18:
		if c.count(1) {
			c.intIn(p[0], 312, 315)
			c.note("q18", p[0])
		}
	case 19:
		if c.count(6) {
			c.brand(p[0])
			c.brand(p[1])
			c.brand(p[2])
			c.intIn(p[3], 1, 10)
			c.intIn(p[4], 10, 20)
			c.intIn(p[5], 20, 30)
			c.note("q19q1", p[3])
			c.note("q19q3", p[5])
		}
	case 20:
		if c.count(3) {
			c.in(p[0], colors)
			c.date(p[1], "1993-01-01", "1997-01-01", "year")
			c.nation(p[2])
		}
	case 21:
		if c.count(1) {
			c.nation(p[0])
			c.note("nation", p[0])
		}
	case 22:
		if c.count(7) {
			codes := map[string]bool{}
			for _, s := range p {
				c.intIn(s, 10, 34)
				codes[s] = true
				c.note("q22", s)
			}
			if len(codes) != 7 {
				c.fail("country codes not 7 distinct values")
			}
		}
	default:
		c.fail("unexpected query number")
	}
}

func TestRandomParamsInRange(t *testing.T) {
	const seeds = 3000
	seen := map[string]map[string]bool{}
	for seed := int64(1); seed <= seeds; seed++ {
		// Seeds spread over the generator's range as well as small ones.
		r := NewRand(seed * 715827883)
		sf := []float64{1, 10, 0.1, 30}[seed%4]
		for n := 1; n <= 22; n++ {
			q := Random(n, sf, r)
			if q.N != n || q.Name != queryNames[n-1] {
				t.Fatalf("Random(%d) returned N=%d Name=%q", n, q.N, q.Name)
			}
			c := &checker{t: t, q: q, seen: seen}
			c.check(sf)
			for _, p := range q.Params {
				if !strings.Contains(q.SQL, p) {
					t.Errorf("Q%d SQL lacks parameter %q", n, p)
				}
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	// Over 3000 seeds every value of the small ranges turns up, the ends
	// included (a range that is one too short or too long fails here or
	// above).
	wantCounts := map[string]int{
		"q1":       61, // 60..120
		"q3":       31, // March 1..31
		"q4":       58, // 1993-01 .. 1997-10
		"q15":      58,
		"q10":      24, // 1993-02 .. 1995-01
		"q14":      60, // 1993-01 .. 1997-12
		"q6":       8,  // 0.02..0.09
		"q13":      16, // 4 × 4 word pairs
		"q16size":  50,
		"q17brand": 25,
		"q18":      4,
		"q19q1":    10,
		"q19q3":    11,
		"q22":      25, // 10..34
		"color":    92,
		"nation":   25,
	}
	for key, want := range wantCounts {
		if got := len(seen[key]); got != want {
			t.Errorf("%s: %d distinct values over %d seeds, want %d", key, got, seeds, want)
		}
	}
}
