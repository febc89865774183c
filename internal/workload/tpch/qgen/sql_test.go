package qgen

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// scanSQL walks s outside string literals, calling f with each byte and
// the parenthesis depth before it. It reports an unterminated literal.
func scanSQL(s string, f func(i int, depth int)) (depth int, unterminated bool) {
	inString := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			if c == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++ // doubled quote inside a literal
					continue
				}
				inString = false
			}
			continue
		}
		switch c {
		case '\'':
			inString = true
		case '(':
			f(i, depth)
			depth++
			continue
		case ')':
			depth--
		}
		f(i, depth)
	}
	return depth, inString
}

// statementProblems lists what a PostgreSQL parser would reject or split:
// a semicolon, unbalanced parentheses or quotes, a comment, an
// unsubstituted marker or qgen tag, a missing statement keyword.
func statementProblems(sql string) []string {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if strings.TrimSpace(sql) != sql {
		add("leading or trailing white space")
	}
	if !strings.HasPrefix(sql, "select\n") && !strings.HasPrefix(sql, "with ") {
		add("does not start with select or with")
	}
	negative := false
	depth, unterminated := scanSQL(sql, func(i, d int) {
		switch {
		case d < 0:
			negative = true
		case sql[i] == ';':
			add("semicolon at offset %d", i)
		case sql[i] == '{' || sql[i] == '}':
			add("unsubstituted marker at offset %d: %q", i, sql[i:min(len(sql), i+5)])
		case strings.HasPrefix(sql[i:], "--") || strings.HasPrefix(sql[i:], "/*"):
			add("comment at offset %d", i)
		case sql[i] == ':':
			add("qgen-style tag at offset %d", i)
		}
	})
	if negative || depth != 0 {
		add("unbalanced parentheses (final depth %d, went negative %v)", depth, negative)
	}
	if unterminated {
		add("unterminated string literal")
	}
	return probs
}

func checkOneStatement(t *testing.T, q Query) {
	t.Helper()
	for _, p := range statementProblems(q.SQL) {
		t.Errorf("Q%d: %s", q.N, p)
	}
}

func TestValidationSQLIsOneStatement(t *testing.T) {
	for _, sf := range []float64{1, 0.01, 100000} {
		for n := 1; n <= 22; n++ {
			checkOneStatement(t, Validation(n, sf))
		}
	}
}

func TestRandomSQLIsOneStatement(t *testing.T) {
	r := NewRand(987654321)
	for range 50 {
		for n := 1; n <= 22; n++ {
			checkOneStatement(t, Random(n, 3, r))
		}
	}
}

func TestScanSQLCatchesErrors(t *testing.T) {
	// The checker itself must fail on broken statements.
	for _, bad := range []string{
		"select (1",
		"select 1)",
		"select 'a",
		"select 1; select 2",
		"select '{1}' || {2}",
	} {
		if len(statementProblems(bad)) == 0 {
			t.Errorf("statementProblems accepted %q", bad)
		}
	}
}

// outputColumns returns the names of the outermost select list's columns:
// the alias after a top-level "as", else the function's name for a call
// (PostgreSQL's default), else the column name without its qualifier.
func outputColumns(sql string) []string {
	var selectAt, fromAt = -1, -1
	scanSQL(sql, func(i, d int) {
		if d != 0 {
			return
		}
		word := func(w string) bool {
			return strings.HasPrefix(sql[i:], w) &&
				(i == 0 || !isIdent(sql[i-1])) &&
				(i+len(w) == len(sql) || !isIdent(sql[i+len(w)]))
		}
		if selectAt < 0 && word("select") {
			selectAt = i + len("select")
		} else if selectAt >= 0 && fromAt < 0 && word("from") {
			fromAt = i
		}
	})
	if selectAt < 0 || fromAt < 0 {
		return nil
	}
	list := sql[selectAt:fromAt]
	var items []string
	start := 0
	scanSQL(list, func(i, d int) {
		if d == 0 && list[i] == ',' {
			items = append(items, list[start:i])
			start = i + 1
		}
	})
	items = append(items, list[start:])

	var names []string
	for _, it := range items {
		it = strings.Join(strings.Fields(it), " ")
		alias := ""
		scanSQL(it, func(i, d int) {
			if d == 0 && strings.HasPrefix(it[i:], " as ") {
				alias = it[i+4:]
			}
		})
		switch {
		case alias != "":
			names = append(names, alias)
		case strings.HasSuffix(it, ")"):
			names = append(names, it[:strings.Index(it, "(")])
		default:
			names = append(names, it[strings.LastIndex(it, ".")+1:])
		}
	}
	return names
}

func isIdent(c byte) bool {
	return c == '_' || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}

// The output columns of each query, in the specification's order with the
// specification's names (Q18's last column is unnamed there; PostgreSQL
// names it after the function).
var specColumns = [22][]string{
	{"l_returnflag", "l_linestatus", "sum_qty", "sum_base_price", "sum_disc_price", "sum_charge", "avg_qty", "avg_price", "avg_disc", "count_order"},
	{"s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone", "s_comment"},
	{"l_orderkey", "revenue", "o_orderdate", "o_shippriority"},
	{"o_orderpriority", "order_count"},
	{"n_name", "revenue"},
	{"revenue"},
	{"supp_nation", "cust_nation", "l_year", "revenue"},
	{"o_year", "mkt_share"},
	{"nation", "o_year", "sum_profit"},
	{"c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment"},
	{"ps_partkey", "value"},
	{"l_shipmode", "high_line_count", "low_line_count"},
	{"c_count", "custdist"},
	{"promo_revenue"},
	{"s_suppkey", "s_name", "s_address", "s_phone", "total_revenue"},
	{"p_brand", "p_type", "p_size", "supplier_cnt"},
	{"avg_yearly"},
	{"c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice", "sum"},
	{"revenue"},
	{"s_name", "s_address"},
	{"s_name", "numwait"},
	{"cntrycode", "numcust", "totacctbal"},
}

func TestOutputColumns(t *testing.T) {
	for n := 1; n <= 22; n++ {
		got := outputColumns(Validation(n, 1).SQL)
		if !slices.Equal(got, specColumns[n-1]) {
			t.Errorf("Q%d output columns %q, want %q", n, got, specColumns[n-1])
		}
	}
}

func TestLimits(t *testing.T) {
	limits := map[int]string{2: "100", 3: "10", 10: "20", 18: "100", 21: "100"}
	re := regexp.MustCompile(`\blimit\b`)
	for n := 1; n <= 22; n++ {
		sql := Validation(n, 1).SQL
		want, ok := limits[n]
		switch {
		case ok && !strings.HasSuffix(sql, "\nlimit "+want):
			t.Errorf("Q%d does not end with limit %s", n, want)
		case !ok && re.MatchString(sql):
			t.Errorf("Q%d has a limit; the specification has none", n)
		}
	}
}

// Spot checks of the substituted validation texts.
func TestValidationSQLText(t *testing.T) {
	for n, frag := range map[int][]string{
		1:  {"l_shipdate <= date '1998-12-01' - interval '90 day'"},
		2:  {"p_size = 15", "p_type like '%BRASS'", "r_name = 'EUROPE'"},
		3:  {"c_mktsegment = 'BUILDING'", "o_orderdate < date '1995-03-15'", "l_shipdate > date '1995-03-15'"},
		4:  {"o_orderdate < date '1993-07-01' + interval '3 month'"},
		6:  {"l_discount between .06 - 0.01 and .06 + 0.01", "l_quantity < 24"},
		7:  {"(n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY')", "(n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE')"},
		8:  {"when nation = 'BRAZIL'", "r_name = 'AMERICA'", "p_type = 'ECONOMY ANODIZED STEEL'"},
		9:  {"p_name like '%green%'"},
		12: {"l_shipmode in ('MAIL', 'SHIP')"},
		13: {"o_comment not like '%special%requests%'"},
		15: {"with revenue (supplier_no, total_revenue) as (", "l_shipdate >= date '1996-01-01'"},
		16: {"p_brand <> 'Brand#45'", "p_type not like 'MEDIUM POLISHED%'", "p_size in (49, 14, 23, 45, 19, 3, 36, 9)"},
		17: {"p_brand = 'Brand#23'", "p_container = 'MED BOX'"},
		18: {"sum(l_quantity) > 300"},
		19: {"p_brand = 'Brand#12'", "l_quantity >= 1 and l_quantity <= 1 + 10", "l_quantity >= 20 and l_quantity <= 20 + 10"},
		20: {"p_name like 'forest%'", "n_name = 'CANADA'"},
		21: {"n_name = 'SAUDI ARABIA'"},
		22: {"substring(c_phone from 1 for 2) in\n                ('13', '31', '23', '29', '30', '18', '17')"},
	} {
		sql := Validation(n, 1).SQL
		for _, f := range frag {
			if !strings.Contains(sql, f) {
				t.Errorf("Q%d lacks %q", n, f)
			}
		}
	}
}

func TestQuoteEscaping(t *testing.T) {
	got := querySQL(21, []string{"O'HARA"})
	if !strings.Contains(got, "n_name = 'O''HARA'") {
		t.Errorf("quote not doubled: %s", got)
	}
}
