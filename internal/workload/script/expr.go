package script

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/workload/gen"
)

// The expression language of pgbench's \set and \if (its documentation,
// "Built-in Operators" and "Built-in Functions"): integer, double, boolean
// and NULL values; :variables; the operators OR, AND, NOT, IS [NOT]
// NULL|TRUE|FALSE, ISNULL, NOTNULL, = <> != < <= > >=, | # & << >> ~, + -,
// * / % and unary + -; CASE WHEN ... THEN ... [ELSE ...] END; and the
// functions below. Precedence, from the loosest: OR, AND (both right
// associative), NOT, IS, the comparisons (which do not chain), the bitwise
// operators, + -, * / %, and the unary signs. Arguments are evaluated left
// to right, except that a > b and a >= b evaluate b first, as pgbench does
// (it rewrites them as b < a and b <= a): with random functions on both
// sides the draws come in pgbench's order.

// SyntaxError is an expression that does not parse; Col is the 1-based
// column of the offending token in the expression's text.
type SyntaxError struct {
	Col int
	Msg string
}

func (e *SyntaxError) Error() string { return e.Msg }

// Scope names the variables of a set of scripts: each name gets a slot,
// in which every client keeps its value (Vars).
type Scope struct {
	names []string
	index map[string]int
}

// NewScope returns an empty scope.
func NewScope() *Scope { return &Scope{index: map[string]int{}} }

// Slot returns the slot of name, adding it if new.
func (s *Scope) Slot(name string) int {
	if i, ok := s.index[name]; ok {
		return i
	}
	s.index[name] = len(s.names)
	s.names = append(s.names, name)
	return len(s.names) - 1
}

// Lookup returns the slot of name, if it has one.
func (s *Scope) Lookup(name string) (int, bool) {
	i, ok := s.index[name]
	return i, ok
}

// Name is the variable in slot i.
func (s *Scope) Name(i int) string { return s.names[i] }

// Len is the number of variables.
func (s *Scope) Len() int { return len(s.names) }

// Vars are one client's variables, by slot. A variable set from text (-D,
// \gset, \setshell) keeps the text and is read as a number, boolean or
// null when an expression uses it; one set by \set keeps its value.
type Vars struct {
	scope *Scope
	vals  []varVal
}

type varVal struct {
	set    bool
	hasVal bool
	v      Value
	text   string
}

// NewVars returns a client's variables, none set.
func NewVars(s *Scope) *Vars { return &Vars{scope: s, vals: make([]varVal, s.Len())} }

// SetValue and SetText set slot i (of the scope, which may have grown
// since NewVars).
func (vs *Vars) SetValue(i int, v Value) {
	vs.grow(i)
	vs.vals[i] = varVal{set: true, hasVal: true, v: v}
}
func (vs *Vars) SetText(i int, s string) { vs.grow(i); vs.vals[i] = varVal{set: true, text: s} }

func (vs *Vars) grow(i int) {
	if i >= len(vs.vals) {
		vs.vals = append(vs.vals, make([]varVal, vs.scope.Len()-len(vs.vals))...)
	}
}

// IsSet reports whether slot i has a value.
func (vs *Vars) IsSet(i int) bool { return i < len(vs.vals) && vs.vals[i].set }

// Value returns slot i as a value (text parsed on first use).
func (vs *Vars) Value(i int) (Value, error) {
	if !vs.IsSet(i) {
		return Value{}, evalErrorf("undefined variable %q", vs.scope.Name(i))
	}
	x := &vs.vals[i]
	if !x.set {
		return Value{}, evalErrorf("undefined variable %q", vs.scope.Name(i))
	}
	if !x.hasVal {
		v, err := ParseValue(x.text)
		if err != nil {
			return Value{}, evalErrorf("variable %q: %v", vs.scope.Name(i), err)
		}
		x.v, x.hasVal = v, true
	}
	return x.v, nil
}

// Text returns slot i as text (as sent to the server).
func (vs *Vars) Text(i int) (string, error) {
	if !vs.IsSet(i) {
		return "", evalErrorf("undefined variable %q", vs.scope.Name(i))
	}
	x := &vs.vals[i]
	if !x.set {
		return "", evalErrorf("undefined variable %q", vs.scope.Name(i))
	}
	if x.hasVal {
		return x.v.Text(), nil
	}
	return x.text, nil
}

// AppendText appends slot i's text (Text) to dst, without allocating
// for an integer.
func (vs *Vars) AppendText(dst []byte, i int) ([]byte, error) {
	if !vs.IsSet(i) {
		return dst, evalErrorf("undefined variable %q", vs.scope.Name(i))
	}
	x := &vs.vals[i]
	switch {
	case !x.hasVal:
		return append(dst, x.text...), nil
	case x.v.Kind == KindInt:
		return strconv.AppendInt(dst, x.v.I, 10), nil
	}
	return append(dst, x.v.Text()...), nil
}

// Env is what an expression evaluates in: the client's variables, its
// random generator (pgbench's per-client generator of the script
// functions) and where debug() writes.
type Env struct {
	Vars  *Vars
	Rand  *PRNG
	Debug io.Writer
	// Where the expression is, as debug() names it: the script (its
	// index among the files) and the command (1-based, as pgbench counts
	// a script's SQL and meta-commands).
	Script, Command int
	line            []byte
}

// debug writes v as pgbench's debug() writes it on stderr, one line in
// one write: "debug(script=0,command=3): int 13" (also "double 1.5",
// "boolean true", "null").
func (e *Env) debug(v Value) {
	b := append(e.line[:0], "debug(script="...)
	b = strconv.AppendInt(b, int64(e.Script), 10)
	b = append(b, ",command="...)
	b = strconv.AppendInt(b, int64(e.Command), 10)
	b = append(b, "): "...)
	switch v.Kind {
	case KindNull:
		b = append(b, "null"...)
	case KindBool:
		b = append(append(b, "boolean "...), v.Text()...)
	case KindInt:
		b = strconv.AppendInt(append(b, "int "...), v.I, 10)
	default:
		b = append(append(b, "double "...), formatDouble(v.D)...)
	}
	b = append(b, '\n')
	_, _ = e.Debug.Write(b)
	e.line = b
}

// Expr is a parsed expression.
type Expr struct {
	root node
	text string
}

// Eval evaluates the expression.
func (e *Expr) Eval(env *Env) (Value, error) { return e.root.eval(env) }

func (e *Expr) String() string { return e.text }

type node interface {
	eval(env *Env) (Value, error)
}

type constNode struct{ v Value }

func (n constNode) eval(*Env) (Value, error) { return n.v, nil }

type varNode struct{ slot int }

func (n varNode) eval(env *Env) (Value, error) { return env.Vars.Value(n.slot) }

// fn identifies an operator or function.
type fn uint8

const (
	fnAdd fn = iota
	fnSub
	fnMul
	fnDiv
	fnMod
	fnEq
	fnNe
	fnLe
	fnLt
	fnBitAnd
	fnBitOr
	fnBitXor
	fnShl
	fnShr
	fnNot
	fnIs
	fnAbs
	fnDebug
	fnDouble
	fnExp
	fnGreatest
	fnLeast
	fnHashFNV1a
	fnHashMurmur2
	fnInt
	fnLn
	fnPermute
	fnPi
	fnPow
	fnRandom
	fnRandomExponential
	fnRandomGaussian
	fnRandomZipfian
	fnSqrt
)

// funcs are the functions by name (case-insensitive): their identifier and
// their least and greatest number of arguments (-1: any). hash, hash_fnv1a,
// hash_murmur2 and permute take :default_seed when the seed is left out.
var funcs = map[string]struct {
	id       fn
	min, max int
}{
	"abs": {fnAbs, 1, 1}, "debug": {fnDebug, 1, 1}, "double": {fnDouble, 1, 1}, "exp": {fnExp, 1, 1},
	"greatest": {fnGreatest, 1, -1}, "least": {fnLeast, 1, -1},
	"hash": {fnHashMurmur2, 1, 2}, "hash_fnv1a": {fnHashFNV1a, 1, 2}, "hash_murmur2": {fnHashMurmur2, 1, 2},
	"int": {fnInt, 1, 1}, "ln": {fnLn, 1, 1}, "mod": {fnMod, 2, 2}, "permute": {fnPermute, 2, 3},
	"pi": {fnPi, 0, 0}, "pow": {fnPow, 2, 2}, "power": {fnPow, 2, 2},
	"random": {fnRandom, 2, 2}, "random_exponential": {fnRandomExponential, 3, 3},
	"random_gaussian": {fnRandomGaussian, 3, 3}, "random_zipfian": {fnRandomZipfian, 3, 3},
	"sqrt": {fnSqrt, 1, 1},
}

// maxArgs is pgbench's limit on a function's arguments.
const maxArgs = 16

type funcNode struct {
	f    fn
	args []node
}

// logicNode is AND (and) or OR: NULL on either side that gets evaluated
// gives NULL, and the right side is evaluated only when the left does not
// decide (false for AND, true for OR).
type logicNode struct {
	a, b node
	and  bool
}
type caseNode struct {
	when, then []node
	els        node // nil: NULL
}

func (n logicNode) eval(env *Env) (Value, error) {
	a, err := n.a.eval(env)
	if err != nil || a.Kind == KindNull {
		return Null(), err
	}
	ba, err := a.toBool()
	if err != nil || ba != n.and {
		return Bool(ba), err // false AND ..., true OR ...
	}
	b, err := n.b.eval(env)
	if err != nil || b.Kind == KindNull {
		return Null(), err
	}
	bb, err := b.toBool()
	return Bool(bb), err
}

func (n caseNode) eval(env *Env) (Value, error) {
	for i, w := range n.when {
		c, err := w.eval(env)
		if err != nil {
			return Value{}, err
		}
		if c.truth() {
			return n.then[i].eval(env)
		}
	}
	if n.els == nil {
		return Null(), nil
	}
	return n.els.eval(env)
}

func (n funcNode) eval(env *Env) (Value, error) {
	var buf [maxArgs]Value
	a := buf[:len(n.args)]
	hasNull := false
	for i, x := range n.args {
		v, err := x.eval(env)
		if err != nil {
			return Value{}, err
		}
		a[i] = v
		hasNull = hasNull || v.Kind == KindNull
	}
	if hasNull && n.f != fnIs && n.f != fnDebug {
		return Null(), nil
	}
	switch n.f {
	case fnAdd, fnSub, fnMul, fnDiv, fnMod, fnEq, fnNe, fnLe, fnLt:
		return arith(n.f, a[0], a[1])
	case fnBitAnd, fnBitOr, fnBitXor, fnShl, fnShr:
		l, err := a[0].toInt()
		if err != nil {
			return Value{}, err
		}
		r, err := a[1].toInt()
		if err != nil {
			return Value{}, err
		}
		switch n.f {
		case fnBitAnd:
			return Int(l & r), nil
		case fnBitOr:
			return Int(l | r), nil
		case fnBitXor:
			return Int(l ^ r), nil
		case fnShl:
			// C leaves a count outside 0..63 undefined; pgbench's
			// builds on x86-64 shift by its low 6 bits.
			return Int(l << (uint64(r) & 63)), nil
		default:
			return Int(l >> (uint64(r) & 63)), nil
		}
	case fnNot:
		b, err := a[0].toBool()
		return Bool(!b), err
	case fnIs:
		return Bool(a[0].Kind == a[1].Kind && a[0].I == a[1].I), nil
	case fnPi:
		return Double(math.Pi), nil
	case fnAbs:
		switch a[0].Kind {
		case KindInt:
			if a[0].I < 0 {
				return Int(-a[0].I), nil
			}
			return a[0], nil
		case KindDouble:
			return Double(math.Abs(a[0].D)), nil
		}
		return Value{}, evalErrorf("cannot coerce %s to double", a[0].Kind)
	case fnDebug:
		if env.Debug != nil {
			env.debug(a[0])
		}
		return a[0], nil
	case fnDouble, fnSqrt, fnLn, fnExp:
		d, err := a[0].toDouble()
		if err != nil {
			return Value{}, err
		}
		switch n.f {
		case fnSqrt:
			d = math.Sqrt(d)
		case fnLn:
			d = math.Log(d)
		case fnExp:
			d = math.Exp(d)
		}
		return Double(d), nil
	case fnInt:
		i, err := a[0].toInt()
		return Int(i), err
	case fnLeast, fnGreatest:
		return extremum(n.f == fnLeast, a)
	case fnRandom, fnRandomExponential, fnRandomGaussian, fnRandomZipfian:
		return random(env.Rand, n.f, a)
	case fnPow:
		x, err := a[0].toDouble()
		if err != nil {
			return Value{}, err
		}
		y, err := a[1].toDouble()
		return Double(math.Pow(x, y)), err
	case fnHashFNV1a, fnHashMurmur2:
		v, err := a[0].toInt()
		if err != nil {
			return Value{}, err
		}
		seed, err := a[1].toInt()
		if err != nil {
			return Value{}, err
		}
		if n.f == fnHashFNV1a {
			return Int(HashFNV1a(v, uint64(seed))), nil
		}
		return Int(HashMurmur2(v, uint64(seed))), nil
	case fnPermute:
		var x [3]int64
		for i := range x {
			v, err := a[i].toInt()
			if err != nil {
				return Value{}, err
			}
			x[i] = v
		}
		if x[1] <= 0 {
			return Value{}, evalErrorf("permute size parameter must be greater than zero")
		}
		return Int(Permute(x[0], x[1], x[2])), nil
	}
	return Value{}, evalErrorf("unknown function %d", n.f)
}

// arith is an overloaded operator: on doubles if either side is one
// (except %), else on integers, with pgbench's overflow and division
// checks.
func arith(f fn, l, r Value) (Value, error) {
	if (l.Kind == KindDouble || r.Kind == KindDouble) && f != fnMod {
		ld, err := l.toDouble()
		if err != nil {
			return Value{}, err
		}
		rd, err := r.toDouble()
		if err != nil {
			return Value{}, err
		}
		switch f {
		case fnAdd:
			return Double(ld + rd), nil
		case fnSub:
			return Double(ld - rd), nil
		case fnMul:
			return Double(ld * rd), nil
		case fnDiv:
			return Double(ld / rd), nil
		case fnEq:
			return Bool(ld == rd), nil
		case fnNe:
			return Bool(ld != rd), nil
		case fnLe:
			return Bool(ld <= rd), nil
		default:
			return Bool(ld < rd), nil
		}
	}
	li, err := l.toInt()
	if err != nil {
		return Value{}, err
	}
	ri, err := r.toInt()
	if err != nil {
		return Value{}, err
	}
	switch f {
	case fnAdd:
		s := li + ri
		if (s > li) != (ri > 0) {
			return Value{}, evalErrorf("bigint add out of range")
		}
		return Int(s), nil
	case fnSub:
		d := li - ri
		if (d < li) != (ri > 0) {
			return Value{}, evalErrorf("bigint sub out of range")
		}
		return Int(d), nil
	case fnMul:
		if li == 0 || ri == 0 {
			return Int(0), nil
		}
		m := li * ri
		if m/ri != li || li == -1 && ri == math.MinInt64 || ri == -1 && li == math.MinInt64 {
			return Value{}, evalErrorf("bigint mul out of range")
		}
		return Int(m), nil
	case fnEq:
		return Bool(li == ri), nil
	case fnNe:
		return Bool(li != ri), nil
	case fnLe:
		return Bool(li <= ri), nil
	case fnLt:
		return Bool(li < ri), nil
	}
	// / and %.
	if ri == 0 {
		return Value{}, evalErrorf("division by zero")
	}
	if ri == -1 {
		if f == fnMod {
			return Int(0), nil
		}
		if li == math.MinInt64 {
			return Value{}, evalErrorf("bigint div out of range")
		}
		return Int(-li), nil
	}
	if f == fnDiv {
		return Int(li / ri), nil
	}
	return Int(li % ri), nil
}

func extremum(least bool, a []Value) (Value, error) {
	double := false
	for _, v := range a {
		double = double || v.Kind == KindDouble
	}
	if double {
		x, err := a[0].toDouble()
		if err != nil {
			return Value{}, err
		}
		for _, v := range a[1:] {
			d, err := v.toDouble()
			if err != nil {
				return Value{}, err
			}
			if least {
				x = math.Min(x, d)
			} else {
				x = math.Max(x, d)
			}
		}
		return Double(x), nil
	}
	x, err := a[0].toInt()
	if err != nil {
		return Value{}, err
	}
	for _, v := range a[1:] {
		i, err := v.toInt()
		if err != nil {
			return Value{}, err
		}
		if least {
			x = min(x, i)
		} else {
			x = max(x, i)
		}
	}
	return Int(x), nil
}

func random(p *PRNG, f fn, a []Value) (Value, error) {
	lb, err := a[0].toInt()
	if err != nil {
		return Value{}, err
	}
	ub, err := a[1].toInt()
	if err != nil {
		return Value{}, err
	}
	if lb > ub {
		return Value{}, evalErrorf("empty range given to random")
	}
	if d := ub - lb; d < 0 || d == math.MaxInt64 {
		// ub-lb+1 must fit in an int64.
		return Value{}, evalErrorf("random range is too large")
	}
	if f == fnRandom {
		return Int(p.Random(lb, ub)), nil
	}
	param, err := a[2].toDouble()
	if err != nil {
		return Value{}, err
	}
	switch f {
	case fnRandomGaussian:
		if param < gen.MinGaussianParam {
			return Value{}, evalErrorf("gaussian parameter must be at least %f (not %f)", gen.MinGaussianParam, param)
		}
		return Int(p.Gaussian(lb, ub, param)), nil
	case fnRandomZipfian:
		if param < gen.MinZipfianParam || param > gen.MaxZipfianParam {
			return Value{}, evalErrorf("zipfian parameter must be in range [%.3f, %.0f] (not %f)", gen.MinZipfianParam, gen.MaxZipfianParam, param)
		}
		return Int(p.Zipfian(lb, ub, param)), nil
	default:
		if param <= 0 {
			return Value{}, evalErrorf("exponential parameter must be greater than zero (not %f)", param)
		}
		return Int(p.Exponential(lb, ub, param)), nil
	}
}

// ParseExpr parses an expression; variables get their slots in scope
// (:default_seed too, for the hash functions and permute given no seed).
func ParseExpr(text string, scope *Scope) (*Expr, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &exprParser{toks: toks, scope: scope}
	root, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, "syntax error at %q: an operator or the end of the expression expected", t.text)
	}
	return &Expr{root: root, text: text}, nil
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tInt
	tMaxIntPlus1 // 9223372036854775808: only after a unary minus
	tDouble
	tVar
	tFunc  // an identifier followed by (
	tIdent // a keyword
	tOp
)

type token struct {
	kind tokKind
	text string // the operator, keyword (lower case), name
	col  int
	i    int64
	d    float64
}

// lex splits an expression into tokens.
func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return append(out, token{kind: tEOF, col: i + 1}), nil
		}
		c, col := s[i], i+1
		switch {
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			isDouble := false
			if j < len(s) && s[j] == '.' {
				isDouble = true
				j++
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
			}
			if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
				k := j + 1
				if k < len(s) && (s[k] == '+' || s[k] == '-') {
					k++
				}
				if k < len(s) && s[k] >= '0' && s[k] <= '9' {
					isDouble = true
					for k < len(s) && s[k] >= '0' && s[k] <= '9' {
						k++
					}
					j = k
				}
			}
			lit := s[i:j]
			if isDouble {
				d, err := strconv.ParseFloat(lit, 64)
				if err != nil {
					return nil, &SyntaxError{Col: col, Msg: fmt.Sprintf("double constant %s is out of range", lit)}
				}
				out = append(out, token{kind: tDouble, text: lit, col: col, d: d})
			} else if lit == "9223372036854775808" {
				out = append(out, token{kind: tMaxIntPlus1, text: lit, col: col})
			} else {
				v, err := strconv.ParseInt(lit, 10, 64)
				if err != nil {
					return nil, &SyntaxError{Col: col, Msg: fmt.Sprintf("bigint constant %s is out of range", lit)}
				}
				out = append(out, token{kind: tInt, text: lit, col: col, i: v})
			}
			i = j
		case c == ':':
			j := i + 1
			for j < len(s) && isNameByte(s[j], j == i+1) {
				j++
			}
			if j == i+1 {
				return nil, &SyntaxError{Col: col, Msg: "a variable name expected after ':'"}
			}
			out = append(out, token{kind: tVar, text: s[i+1 : j], col: col})
			i = j
		case isNameByte(c, true):
			j := i
			for j < len(s) && isNameByte(s[j], false) {
				j++
			}
			word := strings.ToLower(s[i:j])
			k := j
			for k < len(s) && isSpace(s[k]) {
				k++
			}
			if k < len(s) && s[k] == '(' && !isKeyword(word) {
				out = append(out, token{kind: tFunc, text: word, col: col})
			} else {
				out = append(out, token{kind: tIdent, text: word, col: col})
			}
			i = j
		default:
			op := ""
			for _, o := range []string{"<=", ">=", "<>", "!=", "<<", ">>", "+", "-", "*", "/", "%", "<", ">", "=", "&", "|", "#", "~", "(", ")", ","} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, &SyntaxError{Col: col, Msg: fmt.Sprintf("unexpected character %q", c)}
			}
			out = append(out, token{kind: tOp, text: op, col: col})
			i += len(op)
		}
	}
}

// isNameByte: variable and function names are letters, digits (not
// first), underscores and any byte of a multi-byte character, as pgbench's.
func isNameByte(c byte, first bool) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80 || !first && c >= '0' && c <= '9'
}

func isKeyword(w string) bool {
	switch w {
	case "and", "or", "not", "is", "isnull", "notnull", "null", "true", "false", "case", "when", "then", "else", "end":
		return true
	}
	return false
}

type exprParser struct {
	toks  []token
	pos   int
	scope *Scope
}

func (p *exprParser) peek() token { return p.toks[p.pos] }
func (p *exprParser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *exprParser) errAt(t token, format string, a ...any) error {
	return &SyntaxError{Col: t.col, Msg: fmt.Sprintf(format, a...)}
}

// Binding powers (pgbench's precedence, loosest first).
const (
	precOr = 1 + iota
	precAnd
	precNot
	precIs
	precCmp
	precBit
	precAdd
	precMul
	precUnary
)

// binary returns the precedence of the binary or postfix operator t.
func binary(t token) int {
	switch t.kind {
	case tIdent:
		switch t.text {
		case "or":
			return precOr
		case "and":
			return precAnd
		case "is", "isnull", "notnull":
			return precIs
		}
	case tOp:
		switch t.text {
		case "=", "<>", "!=", "<", "<=", ">", ">=":
			return precCmp
		case "|", "#", "&", "<<", ">>":
			return precBit
		case "+", "-":
			return precAdd
		case "*", "/", "%":
			return precMul
		}
	}
	return 0
}

// expr parses operators binding tighter than min (precedence climbing).
func (p *exprParser) expr(min int) (node, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	lastNonAssoc := 0
	for {
		t := p.peek()
		prec := binary(t)
		if prec == 0 || prec <= min {
			return left, nil
		}
		if (prec == precCmp || prec == precIs) && lastNonAssoc == prec {
			return nil, p.errAt(t, "syntax error at %q: comparisons and IS do not chain; add parentheses", t.text)
		}
		p.next()
		switch {
		case t.kind == tIdent && t.text == "isnull":
			left = funcNode{f: fnIs, args: []node{left, constNode{Null()}}}
		case t.kind == tIdent && t.text == "notnull":
			left = funcNode{f: fnNot, args: []node{funcNode{f: fnIs, args: []node{left, constNode{Null()}}}}}
		case t.kind == tIdent && t.text == "is":
			neg := false
			if q := p.peek(); q.kind == tIdent && q.text == "not" {
				neg = true
				p.next()
			}
			q := p.next()
			var c Value
			switch {
			case q.kind == tIdent && q.text == "null":
				c = Null()
			case q.kind == tIdent && q.text == "true":
				c = Bool(true)
			case q.kind == tIdent && q.text == "false":
				c = Bool(false)
			default:
				return nil, p.errAt(q, "syntax error at %q: IS [NOT] takes NULL, TRUE or FALSE", q.text)
			}
			left = funcNode{f: fnIs, args: []node{left, constNode{c}}}
			if neg {
				left = funcNode{f: fnNot, args: []node{left}}
			}
		default:
			// OR and AND are right associative: the right side takes
			// operators of their own precedence too.
			rmin := prec
			if prec == precOr || prec == precAnd {
				rmin = prec - 1
			}
			right, err := p.expr(rmin)
			if err != nil {
				return nil, err
			}
			left = binaryNode(t.text, left, right)
		}
		if prec == precCmp || prec == precIs {
			lastNonAssoc = prec
		} else {
			lastNonAssoc = 0
		}
	}
}

func binaryNode(op string, l, r node) node {
	switch op {
	case "or":
		return logicNode{a: l, b: r}
	case "and":
		return logicNode{a: l, b: r, and: true}
	case ">":
		return funcNode{f: fnLt, args: []node{r, l}}
	case ">=":
		return funcNode{f: fnLe, args: []node{r, l}}
	}
	f := map[string]fn{"+": fnAdd, "-": fnSub, "*": fnMul, "/": fnDiv, "%": fnMod, "=": fnEq, "<>": fnNe, "!=": fnNe,
		"<": fnLt, "<=": fnLe, "|": fnBitOr, "#": fnBitXor, "&": fnBitAnd, "<<": fnShl, ">>": fnShr}[op]
	return funcNode{f: f, args: []node{l, r}}
}

// unary parses a prefix operator and its operand, or a primary.
func (p *exprParser) unary() (node, error) {
	t := p.peek()
	switch {
	case t.kind == tOp && (t.text == "+" || t.text == "-"):
		p.next()
		if q := p.peek(); t.text == "-" && q.kind == tMaxIntPlus1 {
			p.next()
			return constNode{Int(math.MinInt64)}, nil
		}
		x, err := p.expr(precUnary - 1)
		if err != nil {
			return nil, err
		}
		if t.text == "+" {
			return x, nil
		}
		return funcNode{f: fnSub, args: []node{constNode{Int(0)}, x}}, nil
	case t.kind == tOp && t.text == "~":
		p.next()
		x, err := p.expr(precBit)
		if err != nil {
			return nil, err
		}
		return funcNode{f: fnBitXor, args: []node{constNode{Int(-1)}, x}}, nil
	case t.kind == tIdent && t.text == "not":
		p.next()
		x, err := p.expr(precNot)
		if err != nil {
			return nil, err
		}
		return funcNode{f: fnNot, args: []node{x}}, nil
	}
	return p.primary()
}

func (p *exprParser) primary() (node, error) {
	t := p.next()
	switch t.kind {
	case tInt:
		return constNode{Int(t.i)}, nil
	case tMaxIntPlus1:
		return nil, p.errAt(t, "bigint constant %s is out of range", t.text)
	case tDouble:
		return constNode{Double(t.d)}, nil
	case tVar:
		return varNode{slot: p.scope.Slot(t.text)}, nil
	case tFunc:
		return p.call(t)
	case tIdent:
		switch t.text {
		case "null":
			return constNode{Null()}, nil
		case "true":
			return constNode{Bool(true)}, nil
		case "false":
			return constNode{Bool(false)}, nil
		case "case":
			return p.caseExpr(t)
		}
		if _, ok := funcs[t.text]; ok {
			return nil, p.errAt(t, "function %s needs its arguments in parentheses", t.text)
		}
		return nil, p.errAt(t, "syntax error at %q: a variable is written :%s", t.text, t.text)
	case tOp:
		if t.text == "(" {
			x, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			if q := p.next(); q.kind != tOp || q.text != ")" {
				return nil, p.errAt(q, "syntax error at %q: ')' expected", q.text)
			}
			return x, nil
		}
	case tEOF:
		return nil, p.errAt(t, "unexpected end of expression")
	}
	return nil, p.errAt(t, "syntax error at %q", t.text)
}

func (p *exprParser) call(name token) (node, error) {
	f, ok := funcs[name.text]
	if !ok {
		return nil, p.errAt(name, "unknown function %q", name.text)
	}
	p.next() // (
	var args []node
	if q := p.peek(); !(q.kind == tOp && q.text == ")") {
		for {
			x, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			args = append(args, x)
			q := p.next()
			if q.kind == tOp && q.text == ")" {
				break
			}
			if q.kind != tOp || q.text != "," {
				return nil, p.errAt(q, "syntax error at %q: ',' or ')' expected in the arguments of %s", q.text, name.text)
			}
		}
	} else {
		p.next()
	}
	n := len(args)
	if n < f.min || f.max >= 0 && n > f.max || n > maxArgs {
		want := strconv.Itoa(f.min)
		switch {
		case f.max < 0:
			want = fmt.Sprintf("at least %d (at most %d)", f.min, maxArgs)
		case f.max != f.min:
			want = fmt.Sprintf("%d or %d", f.min, f.max)
		}
		return nil, p.errAt(name, "wrong number of arguments for %s: %d, want %s", name.text, n, want)
	}
	switch f.id {
	case fnHashFNV1a, fnHashMurmur2, fnPermute:
		if n < f.max {
			args = append(args, varNode{slot: p.scope.Slot("default_seed")})
		}
	}
	return funcNode{f: f.id, args: args}, nil
}

func (p *exprParser) caseExpr(kw token) (node, error) {
	var c caseNode
	for {
		t := p.peek()
		if t.kind != tIdent || t.text != "when" {
			break
		}
		p.next()
		w, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if q := p.next(); q.kind != tIdent || q.text != "then" {
			return nil, p.errAt(q, "syntax error at %q: THEN expected", q.text)
		}
		th, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		c.when, c.then = append(c.when, w), append(c.then, th)
	}
	if len(c.when) == 0 {
		return nil, p.errAt(p.peek(), "syntax error: CASE needs at least one WHEN ... THEN ...")
	}
	if t := p.peek(); t.kind == tIdent && t.text == "else" {
		p.next()
		e, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		c.els = e
	}
	if q := p.next(); q.kind != tIdent || q.text != "end" {
		return nil, p.errAt(q, "syntax error at %q: END expected to close the CASE at column %d", q.text, kw.col)
	}
	return c, nil
}
