package script

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kind is the type of a Value: pgbench's expression values are NULL,
// booleans, 64-bit integers and doubles.
type Kind uint8

const (
	KindNull Kind = iota
	KindBool
	KindInt
	KindDouble
)

func (k Kind) String() string {
	switch k {
	case KindBool:
		return "boolean"
	case KindInt:
		return "int"
	case KindDouble:
		return "double"
	default:
		return "null"
	}
}

// Value is the value of an expression or of a variable.
type Value struct {
	Kind Kind
	I    int64 // KindInt; KindBool: 0 or 1
	D    float64
}

// Int, Double, Bool and Null make values.
func Int(i int64) Value      { return Value{Kind: KindInt, I: i} }
func Double(d float64) Value { return Value{Kind: KindDouble, D: d} }
func Null() Value            { return Value{} }
func Bool(b bool) Value {
	if b {
		return Value{Kind: KindBool, I: 1}
	}
	return Value{Kind: KindBool}
}

// Text is the value as text, as pgbench gives it to a statement's
// parameter or to a shell command: integers in decimal, doubles as C's
// %.15g, booleans true or false, and NULL as the four letters NULL (a
// text, not an SQL null: pgbench's rule).
func (v Value) Text() string {
	switch v.Kind {
	case KindInt:
		return strconv.FormatInt(v.I, 10)
	case KindDouble:
		return formatDouble(v.D)
	case KindBool:
		if v.I != 0 {
			return "true"
		}
		return "false"
	}
	return "NULL"
}

func (v Value) String() string { return v.Text() }

// formatDouble is C's printf("%.15g") (DBL_DIG digits), as pgbench turns a
// double variable into text.
func formatDouble(d float64) string {
	switch {
	case math.IsNaN(d):
		return "nan"
	case math.IsInf(d, 1):
		return "inf"
	case math.IsInf(d, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(d, 'g', 15, 64)
	// Go writes the exponent with at least two digits and a sign, as C
	// does; it keeps trailing zeros of the mantissa that %g drops.
	mant, exp := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' {
			mant, exp = s[:i], s[i:]
			break
		}
	}
	if strings.Contains(mant, ".") {
		for len(mant) > 0 && mant[len(mant)-1] == '0' {
			mant = mant[:len(mant)-1]
		}
		if mant[len(mant)-1] == '.' {
			mant = mant[:len(mant)-1]
		}
	}
	return mant + exp
}

// EvalError is an expression failing at run time (division by zero, an
// argument out of range, a value of the wrong type, an unknown variable);
// the message is pgbench's.
type EvalError struct{ Msg string }

func (e *EvalError) Error() string { return e.Msg }

func evalErrorf(format string, a ...any) error {
	return &EvalError{Msg: fmt.Sprintf(format, a...)}
}

// toBool is pgbench's coercion to a boolean: only booleans are.
func (v Value) toBool() (bool, error) {
	if v.Kind == KindBool {
		return v.I != 0, nil
	}
	return false, evalErrorf("cannot coerce %s to boolean", v.Kind)
}

// truth is the value as a condition (\if, CASE WHEN): NULL and zero are
// false.
func (v Value) truth() bool {
	switch v.Kind {
	case KindBool, KindInt:
		return v.I != 0
	case KindDouble:
		return v.D != 0
	}
	return false
}

// toInt coerces to an integer: a double is rounded to the nearest, ties to
// even (C's rint), and must fit.
func (v Value) toInt() (int64, error) {
	switch v.Kind {
	case KindInt:
		return v.I, nil
	case KindDouble:
		d := math.RoundToEven(v.D)
		if math.IsNaN(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0 {
			return 0, evalErrorf("double to int overflow for %f", d)
		}
		return int64(d), nil
	}
	return 0, evalErrorf("cannot coerce %s to int", v.Kind)
}

func (v Value) toDouble() (float64, error) {
	switch v.Kind {
	case KindDouble:
		return v.D, nil
	case KindInt:
		return float64(v.I), nil
	}
	return 0, evalErrorf("cannot coerce %s to double", v.Kind)
}

// ParseValue reads a variable's text (from -D, \gset or \setshell) as
// pgbench does when an expression uses it: null; a boolean (a prefix of
// true, yes, false or no, or on, off); an integer (blanks before, a sign,
// digits); else a double (the whole text), else an error.
func ParseValue(s string) (Value, error) {
	if s == "" {
		return Value{}, evalErrorf("empty value")
	}
	switch l := strings.ToLower(s); {
	case l == "null":
		return Null(), nil
	case strings.HasPrefix("true", l) || strings.HasPrefix("yes", l) || l == "on":
		return Bool(true), nil
	case strings.HasPrefix("false", l) || strings.HasPrefix("no", l) || l == "off" || l == "of":
		return Bool(false), nil
	}
	t := strings.TrimLeft(s, " \t\n\r\f\v")
	if isInt(t) {
		i, err := strconv.ParseInt(strings.TrimPrefix(t, "+"), 10, 64)
		if err != nil {
			return Value{}, evalErrorf("value %q is out of range for type bigint", s)
		}
		return Int(i), nil
	}
	d, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return Value{}, evalErrorf("value %q is out of range for type double", s)
		}
		return Value{}, evalErrorf("malformed value %q: not a number, boolean or null", s)
	}
	return Double(d), nil
}

// isInt: an optional sign and digits.
func isInt(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
