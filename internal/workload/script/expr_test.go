package script

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/workload/gen"
)

// eval parses and evaluates text with the variables given (name=value
// text) and :default_seed 5432.
func eval(t *testing.T, text string, vars map[string]string) (Value, error) {
	t.Helper()
	sc := NewScope()
	e, err := ParseExpr(text, sc)
	if err != nil {
		return Value{}, err
	}
	vs := NewVars(sc)
	for k, v := range vars {
		vs.SetText(sc.Slot(k), v)
	}
	if i, ok := sc.Lookup("default_seed"); ok && !vs.IsSet(i) {
		vs.SetValue(i, Int(5432))
	}
	return e.Eval(&Env{Vars: vs, Rand: gen.NewPRNG(1)})
}

// TestPgbenchDocumentedExamples: the examples of pgbench's documentation
// (PostgreSQL 15, "Built-in Operators" and "Built-in Functions"), with
// the results it gives.
func TestPgbenchDocumentedExamples(t *testing.T) {
	for _, c := range []struct {
		expr string
		want Value
	}{
		{"true OR false", Bool(true)},
		{"true AND false", Bool(false)},
		{"NOT false", Bool(true)},
		{"1 is null", Bool(false)},
		{"1 notnull", Bool(true)},
		{"5 = 4", Bool(false)},
		{"5 <> 4", Bool(true)},
		{"5 != 5", Bool(false)},
		{"5 < 4", Bool(false)},
		{"5 <= 4", Bool(false)},
		{"5 > 4", Bool(true)},
		{"5 >= 4", Bool(true)},
		{"1 | 2", Int(3)},
		{"1 # 3", Int(2)},
		{"1 & 3", Int(1)},
		{"~ 1", Int(-2)},
		{"1 << 2", Int(4)},
		{"8 >> 2", Int(2)},
		{"5 + 4", Int(9)},
		{"3 - 2.0", Double(1.0)},
		{"5 * 4", Int(20)},
		{"5 / 3", Int(1)},
		{"3 % 2", Int(1)},
		{"- 2.0", Double(-2.0)},
		{"abs(-17)", Int(17)},
		{"debug(5432.1)", Double(5432.1)},
		{"double(5432)", Double(5432.0)},
		{"exp(1.0)", Double(2.718281828459045)},
		{"greatest(5, 4, 3, 2)", Int(5)},
		{"hash(10, 5432)", Int(-5817877081768721676)},
		{"hash_fnv1a(10, 5432)", Int(-7793829335365542153)},
		{"hash_murmur2(10, 5432)", Int(-5817877081768721676)},
		{"int(5.4 + 3.8)", Int(9)},
		{"least(5, 4, 3, 2.1)", Double(2.1)},
		{"ln(2.718281828459045)", Double(1.0)},
		{"mod(54, 32)", Int(22)},
		{"pi()", Double(math.Pi)},
		{"pow(2.0, 10)", Double(1024.0)},
		{"power(2.0, 10)", Double(1024.0)},
		{"sqrt(2.0)", Double(math.Sqrt2)},
		// pgbench's documented example of \set with CASE and variables.
		{"CASE WHEN :x > 0 THEN 1 ELSE 0 END", Int(1)},
		{"CASE WHEN :x < 0 THEN 1 END", Null()},
		{":x + :y * 2", Int(27)},
		{"(:x + :y) * 2", Int(44)},
		{"-9223372036854775808", Int(math.MinInt64)},
		{"1.5e3", Double(1500)},
		{".5", Double(0.5)},
		{"int(2.5)", Int(2)}, // rint: ties to even
		{"int(3.5)", Int(4)},
		{"hash(10)", Int(-5817877081768721676)}, // :default_seed
		{"null IS NULL", Bool(true)},
		{"1 + null", Null()},
		{"null AND false", Null()},
		{"false AND null", Bool(false)},
		{"true OR null", Bool(true)},
		{"1 < 2 AND 3 < 4 OR false", Bool(true)},
		{"NOT 1 = 2", Bool(true)},
		{"~ 1 + 1", Int(-3)}, // ~ takes the sum, as in pgbench's grammar
		{"-2 * 3", Int(-6)},
		{":b", Bool(true)},
		{":d * 2", Double(3.0)},
		{"true IS TRUE", Bool(true)},
		{"1 IS NOT NULL", Bool(true)},
		{"greatest(1, 2.5)", Double(2.5)},
		{"7 % -1", Int(0)},
		{"-7 / 2", Int(-3)},
		{"-7 % 2", Int(-1)},
	} {
		got, err := eval(t, c.expr, map[string]string{"x": "17", "y": "5", "b": "yes", "d": " 1.5"})
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		same := got.Kind == c.want.Kind && got.I == c.want.I && (got.D == c.want.D || math.Abs(got.D-c.want.D) < 1e-12)
		if !same {
			t.Errorf("%s = %v (%s), want %v (%s)", c.expr, got, got.Kind, c.want, c.want.Kind)
		}
	}
}

// TestEvalErrors: the run-time errors of pgbench's functions, with its
// messages.
func TestEvalErrors(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"1 / 0", "division by zero"},
		{"1 % 0", "division by zero"},
		{"mod(5, 0)", "division by zero"},
		{"-9223372036854775808 / -1", "bigint div out of range"},
		{"9223372036854775807 + 1", "bigint add out of range"},
		{"-9223372036854775808 - 1", "bigint sub out of range"},
		{"4611686018427387904 * 2", "bigint mul out of range"},
		{"-9223372036854775808 * -1", "bigint mul out of range"},
		{"int(1e30)", "double to int overflow"},
		{"random(5, 3)", "empty range given to random"},
		{"random(-9223372036854775808, 9223372036854775807)", "random range is too large"},
		{"random_gaussian(1, 10, 1.5)", "gaussian parameter must be at least 2"},
		{"random_zipfian(1, 10, 1.0)", "zipfian parameter must be in range [1.001, 1000]"},
		{"random_zipfian(1, 10, 1001)", "zipfian parameter must be in range"},
		{"random_exponential(1, 10, 0)", "exponential parameter must be greater than zero"},
		{"permute(1, 0)", "permute size parameter must be greater than zero"},
		{":nope + 1", `undefined variable "nope"`},
		{"1 AND true", "cannot coerce int to boolean"},
		{"NOT 1", "cannot coerce int to boolean"},
		{"true + 1", "cannot coerce boolean to int"},
		{"sqrt(true)", "cannot coerce boolean to double"},
		{":s + 1", `variable "s": malformed value "abc"`},
	} {
		_, err := eval(t, c.expr, map[string]string{"s": "abc"})
		var ee *EvalError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.expr, err, c.want)
		}
	}
}

// TestExprSyntaxErrors: what does not parse, with the column.
func TestExprSyntaxErrors(t *testing.T) {
	for _, c := range []struct {
		expr string
		col  int
		want string
	}{
		{"1 +", 4, "unexpected end"},
		{"(1 + 2", 7, "')' expected"},
		{"1 < 2 < 3", 7, "do not chain"},
		{"foo(1)", 1, "unknown function"},
		{"random(1)", 1, "wrong number of arguments for random"},
		{"pi(1)", 1, "wrong number of arguments"},
		{"x + 1", 1, "a variable is written :x"},
		{"9223372036854775808", 1, "out of range"},
		{"99999999999999999999", 1, "out of range"},
		{"1 @ 2", 3, "unexpected character"},
		{"CASE 1 END", 6, "WHEN"},
		{"CASE WHEN 1 THEN 2", 19, "END expected"},
		{"1 IS 2", 6, "IS [NOT] takes NULL, TRUE or FALSE"},
		{"1 2", 3, "an operator or the end"},
		{": x", 1, "variable name expected"},
	} {
		_, err := ParseExpr(c.expr, NewScope())
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, c.want) || se.Col != c.col {
			t.Errorf("%q: %v (col %d), want %q at col %d", c.expr, err, colOf(err), c.want, c.col)
		}
	}
}

func colOf(err error) int {
	var se *SyntaxError
	if errors.As(err, &se) {
		return se.Col
	}
	return -1
}

// TestGreaterThanDrawsRightFirst: pgbench evaluates a > b as b < a, so
// with random functions on both sides the right one draws first.
func TestGreaterThanDrawsRightFirst(t *testing.T) {
	sc := NewScope()
	e, err := ParseExpr("random(1, 1000000) > random(1000001, 2000000) * 0 + random(1, 1000000)", sc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Eval(&Env{Vars: NewVars(sc), Rand: gen.NewPRNG(7)})
	if err != nil {
		t.Fatal(err)
	}
	p := gen.NewPRNG(7)
	r2 := p.Random(1000001, 2000000) // right side first
	_ = r2
	r3 := p.Random(1, 1000000)
	r1 := p.Random(1, 1000000)
	if want := Bool(r1 > r3); got != want {
		t.Errorf("got %v, want %v (right side drawn first)", got, want)
	}
}

func TestFormatDouble(t *testing.T) {
	for d, want := range map[float64]string{1: "1", 1.5: "1.5", 0.1: "0.1", 1e20: "1e+20", 1.0 / 3: "0.333333333333333",
		-2: "-2", 123456789012345678: "1.23456789012346e+17", 1e-5: "1e-05", math.Inf(1): "inf"} {
		if got := formatDouble(d); got != want {
			t.Errorf("formatDouble(%v) = %q, want %q (C's %%.15g)", d, got, want)
		}
	}
}

func TestParseValue(t *testing.T) {
	for s, want := range map[string]Value{"12": Int(12), " -3": Int(-3), "+4": Int(4), "1.5": Double(1.5), "1e3": Double(1000),
		"t": Bool(true), "yes": Bool(true), "on": Bool(true), "f": Bool(false), "no": Bool(false), "off": Bool(false), "NULL": Null()} {
		got, err := ParseValue(s)
		if err != nil || got != want {
			t.Errorf("ParseValue(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "abc", "1.5x", "99999999999999999999", "o"} {
		if v, err := ParseValue(s); err == nil {
			t.Errorf("ParseValue(%q) = %v, want an error", s, v)
		}
	}
}
