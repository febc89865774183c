package qgen

import (
	"fmt"
	"math"
	"strconv"
)

// numQueries is the number of queries of a TPC-H-like query stream.
const numQueries = 22

// Query is one executable TPC-H-like query: the query's number and name,
// its substitution parameters and its text with the parameters in place.
type Query struct {
	N    int    // 1..22
	Name string // the specification's name, e.g. "Pricing Summary Report"
	// Params are the query's substitution parameters, in the order the
	// query template numbers them, as text (e.g. ["90"] for Q1).
	Params []string
	// SQL is one PostgreSQL statement with the parameters substituted as
	// literals, without a trailing semicolon.
	SQL string
}

// queryNames are the names the TPC-H specification gives the queries
// (clause 2.4), indexed by query number − 1.
var queryNames = [numQueries]string{
	"Pricing Summary Report",
	"Minimum Cost Supplier",
	"Shipping Priority",
	"Order Priority Checking",
	"Local Supplier Volume",
	"Forecasting Revenue Change",
	"Volume Shipping",
	"National Market Share",
	"Product Type Profit Measure",
	"Returned Item Reporting",
	"Important Stock Identification",
	"Shipping Modes and Order Priority",
	"Customer Distribution",
	"Promotion Effect",
	"Top Supplier",
	"Parts/Supplier Relationship",
	"Small-Quantity-Order Revenue",
	"Large Volume Customer",
	"Discounted Revenue",
	"Potential Part Promotion",
	"Suppliers Who Kept Orders Waiting",
	"Global Sales Opportunity",
}

// validationParams are the specification's validation parameters, the
// values `qgen -d` substitutes (the defaults table of dbgen/varsub.c;
// TPC.md 2.1). Q11's fraction is not here: it is 0.0001/SF (see
// q11Fraction).
var validationParams = [numQueries][]string{
	{"90"},
	{"15", "BRASS", "EUROPE"},
	{"BUILDING", "1995-03-15"},
	{"1993-07-01"},
	{"ASIA", "1994-01-01"},
	{"1994-01-01", ".06", "24"},
	{"FRANCE", "GERMANY"},
	{"BRAZIL", "AMERICA", "ECONOMY ANODIZED STEEL"},
	{"green"},
	{"1993-10-01"},
	{"GERMANY"},
	{"MAIL", "SHIP", "1994-01-01"},
	{"special", "requests"},
	{"1995-09-01"},
	{"1996-01-01"},
	{"Brand#45", "MEDIUM POLISHED", "49", "14", "23", "45", "19", "3", "36", "9"},
	{"Brand#23", "MED BOX"},
	{"300"},
	{"Brand#12", "Brand#23", "Brand#34", "1", "10", "20"},
	{"forest", "1994-01-01", "CANADA"},
	{"SAUDI ARABIA"},
	{"13", "31", "23", "29", "30", "18", "17"},
}

// Validation returns query n (1..22) with the specification's validation
// parameters, as `qgen -d -s sf` writes it. They are fixed except Q11's
// FRACTION, which is 0.0001/SF at every scale ("0.0001000000" at SF 1,
// printed as qgen prints it, with ten decimals). The answers of the
// validation queries on the SF 1 database are the specification's
// qualification answers.
//
// Validation panics if n is not in 1..22 or sf is not a positive finite
// number: both are programming errors, not run-time conditions.
func Validation(n int, sf float64) Query {
	checkArgs(n, sf)
	params := append([]string(nil), validationParams[n-1]...)
	if n == 11 {
		params = append(params, q11Fraction(sf))
	}
	return build(n, params)
}

// Random returns query n (1..22) with parameters drawn from rng, from the
// ranges and with the draws of qgen's varsub (dbgen/varsub.c; the ranges
// are those of TPC.md 2.1). Query n draws only from rng's stream for query
// n, so the first Random(n, ...) on a NewRand(seed) gives exactly what
// `qgen -r seed -s sf n` gives; later calls for the same n continue that
// stream (qgen itself never draws a query twice; for Q16 and Q22 each call
// shuffles the identity list afresh, where a second qgen draw would
// reshuffle the previous result).
//
// Random panics if n is not in 1..22, sf is not a positive finite number
// or rng is nil.
func Random(n int, sf float64, rng *Rand) Query {
	checkArgs(n, sf)
	if rng == nil {
		panic("qgen: Random with a nil *Rand")
	}
	return build(n, drawParams(n, sf, rng))
}

func checkArgs(n int, sf float64) {
	if n < 1 || n > numQueries {
		panic(fmt.Sprintf("qgen: query number %d out of range 1..%d", n, numQueries))
	}
	if !(sf > 0) || math.IsInf(sf, 0) {
		panic(fmt.Sprintf("qgen: scale factor %v is not a positive number", sf))
	}
}

func build(n int, params []string) Query {
	return Query{N: n, Name: queryNames[n-1], Params: params, SQL: querySQL(n, params)}
}

// q11Fraction is Q11's FRACTION, 0.0001/SF (TPC-H clause 2.4.11.3),
// formatted as qgen formats it ("%11.10f").
func q11Fraction(sf float64) string {
	return strconv.FormatFloat(0.0001/sf, 'f', 10, 64)
}

// drawParams draws query n's parameters from its stream of r, in qgen's
// order of draws (dbgen/varsub.c), and formats them as qgen does.
func drawParams(n int, sf float64, r *Rand) []string {
	s := n // query n draws from stream n
	num := func(lo, hi int64) string { return strconv.FormatInt(r.intn(lo, hi, s), 10) }
	// A year 1993..1997 as its January 1st.
	yearStart := func() string { return fmt.Sprintf("19%02d-01-01", r.intn(93, 97, s)) }
	// The first day of month m, counted from January 1993 = 0.
	monthStart := func(lo, hi int64) string {
		m := r.intn(lo, hi, s)
		return fmt.Sprintf("19%02d-%02d-01", 93+m/12, m%12+1)
	}
	nationName := func() string { return nations[r.pick(len(nations), 1, s)].name }
	typeIndex := func() int { return r.pick(numTypes, 1, s) }
	brand := func() string {
		m := r.intn(1, 5, s)
		k := r.intn(1, 5, s)
		return fmt.Sprintf("Brand#%d%d", m, k)
	}

	switch n {
	case 1: // DELTA in [60, 120] days
		return []string{num(60, 120)}
	case 2: // SIZE in [1, 50], TYPE = a P_TYPE's last syllable, REGION
		size := num(1, 50)
		syllable := partType(typeIndex())[2]
		region := regions[r.pick(len(regions), 1, s)]
		return []string{size, syllable, region}
	case 3: // SEGMENT, DATE a day of March 1995
		segment := segments[r.pick(len(segments), 1, s)]
		day := r.intn(0, 30, s)
		return []string{segment, fmt.Sprintf("1995-03-%02d", day+1)}
	case 4: // DATE the first of a month, January 1993 .. October 1997
		return []string{monthStart(0, 57)}
	case 5: // REGION, DATE January 1st of 1993..1997
		region := regions[r.pick(len(regions), 1, s)]
		return []string{region, yearStart()}
	case 6: // DATE January 1st of 1993..1997, DISCOUNT 0.02..0.09, QUANTITY 24..25
		date := yearStart()
		discount := fmt.Sprintf("0.%02d", r.intn(2, 9, s))
		return []string{date, discount, num(24, 25)}
	case 7: // NATION1 != NATION2: draw the second until it differs
		first := r.pick(len(nations), 1, s)
		second := r.pick(len(nations), 1, s)
		for second == first {
			second = r.pick(len(nations), 1, s)
		}
		return []string{nations[first].name, nations[second].name}
	case 8: // NATION, REGION = the nation's region, TYPE a full P_TYPE
		nat := nations[r.pick(len(nations), 1, s)]
		t := partType(typeIndex())
		return []string{nat.name, regions[nat.region], t[0] + " " + t[1] + " " + t[2]}
	case 9: // COLOR
		return []string{colors[r.pick(len(colors), 1, s)]}
	case 10: // DATE the first of a month, February 1993 .. January 1995
		return []string{monthStart(1, 24)}
	case 11: // NATION, FRACTION = 0.0001/SF
		return []string{nationName(), q11Fraction(sf)}
	case 12: // SHIPMODE1 != SHIPMODE2, DATE January 1st of 1993..1997
		first := r.pick(len(shipModes), 1, s)
		second := r.pick(len(shipModes), 1, s)
		for second == first {
			second = r.pick(len(shipModes), 1, s)
		}
		return []string{shipModes[first], shipModes[second], yearStart()}
	case 13: // WORD1, WORD2
		w1 := q13Words1[r.pick(len(q13Words1), q13Weight1, s)]
		w2 := q13Words2[r.pick(len(q13Words2), q13Weight2, s)]
		return []string{w1, w2}
	case 14: // DATE the first of a month, January 1993 .. December 1997
		return []string{monthStart(0, 59)}
	case 15: // DATE the first of a month, January 1993 .. October 1997
		return []string{monthStart(0, 57)}
	case 16: // BRAND, TYPE = a P_TYPE's first two syllables, 8 distinct SIZEs
		b := brand()
		t := partType(typeIndex())
		sizes := identity(1, 50)
		r.permute(sizes, s)
		params := []string{b, t[0] + " " + t[1]}
		for _, size := range sizes[:8] {
			params = append(params, strconv.Itoa(size))
		}
		return params
	case 17: // BRAND, CONTAINER
		b := brand()
		return []string{b, container(r.pick(numContainers, 1, s))}
	case 18: // QUANTITY in [312, 315]
		return []string{num(312, 315)}
	case 19: // three BRANDs, QUANTITY1..3 in [1,10], [10,20], [20,30]
		b1, b2, b3 := brand(), brand(), brand()
		return []string{b1, b2, b3, num(1, 10), num(10, 20), num(20, 30)}
	case 20: // COLOR, DATE January 1st of 1993..1997, NATION
		color := colors[r.pick(len(colors), 1, s)]
		date := yearStart()
		return []string{color, date, nationName()}
	case 21: // NATION
		return []string{nationName()}
	case 22: // 7 distinct country codes: a shuffle of 10..34, first seven
		codes := identity(10, 34)
		r.permute(codes, s)
		params := make([]string, 7)
		for i := range params {
			params[i] = strconv.Itoa(codes[i])
		}
		return params
	}
	panic(fmt.Sprintf("qgen: query number %d out of range 1..%d", n, numQueries))
}

// identity returns lo, lo+1, ..., hi.
func identity(lo, hi int) []int {
	a := make([]int, hi-lo+1)
	for i := range a {
		a[i] = lo + i
	}
	return a
}
