package script

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"

	"github.com/tunebench/tunebench/internal/workload/gen"
)

// FileSpec is one --file: a script file and its weight (FILE[@W], as
// pgbench -f).
type FileSpec struct {
	Path   string
	Weight int
}

// ParseFileSpec splits FILE[@W]: the weight is what follows the last @
// when it is a whole number (otherwise the @ belongs to the name), 1 when
// none is given.
func ParseFileSpec(s string) (FileSpec, error) {
	if k := strings.LastIndexByte(s, '@'); k >= 0 {
		if w, err := strconv.Atoi(s[k+1:]); err == nil {
			if w < 0 {
				return FileSpec{}, fmt.Errorf("%s: the weight %d is negative", s, w)
			}
			if s[:k] == "" {
				return FileSpec{}, fmt.Errorf("%s: no file name before the weight", s)
			}
			return FileSpec{Path: s[:k], Weight: w}, nil
		}
	}
	if s == "" {
		return FileSpec{}, fmt.Errorf("an empty file name")
	}
	return FileSpec{Path: s, Weight: 1}, nil
}

// Define is one -D NAME=VALUE: a variable every client starts with, as
// text (pgbench -D).
type Define struct {
	Name, Value string
}

// ParseDefine splits NAME=VALUE.
func ParseDefine(s string) (Define, error) {
	k := strings.IndexByte(s, '=')
	if k <= 0 {
		return Define{}, fmt.Errorf("%q is not NAME=VALUE", s)
	}
	if !validName(s[:k]) {
		return Define{}, fmt.Errorf("%q: a variable name is letters, digits and underscores, not starting with a digit", s[:k])
	}
	return Define{Name: s[:k], Value: s[k+1:]}, nil
}

// The variables a run gives every client (pgbench's names).
const (
	varScale       = "scale"
	varClientID    = "client_id"
	varRandomSeed  = "random_seed"
	varDefaultSeed = "default_seed"
)

// StmtInfo identifies one statement of the scripts, for its results.
type StmtInfo struct {
	Script int    // index of its script
	Line   int    // where it starts in the file
	Text   string // the command, on one line
}

// program is a run's scripts, parsed and compiled once and shared by its
// workers: the session statements (every SQL command of every script is
// one prepared statement), the weights and the variables.
type program struct {
	scope   *Scope
	scripts []*Script
	ops     []string // the scripts' names (the executor's operations)
	sha     []string // sha256 of each file's text
	texts   []string
	// stmt[s][c] is the SQL command (its index in info, prep and kinds)
	// of script s's command c (-1: not SQL); prep[i] is SQL command i's
	// session statement (-1: a compound command, sent as a simple
	// query); kinds[i] what its statements do, in order (one for a
	// prepared statement).
	stmt  [][]int
	stmts []target.Stmt
	prep  []int
	info  []StmtInfo
	kinds [][]stmtKind
	// selects: every statement is a SELECT (--follow-server auto).
	selects bool
	total   int // the weights' sum
	// mux: no command blocks the driver thread (\sleep, \shell): the
	// workers can be multiplexed.
	mux bool
	// results: some command stores its results (\gset, \aset).
	results bool
	// perStmt: the workers keep each SQL command's results (at most
	// maxStmtResults commands).
	perStmt bool
	defines []Define
	builtin [4]int // slots of scale, client_id, random_seed, default_seed
	// Per run.
	scale    int64
	seed     uint64
	clients  []*PRNG // pgbench's per-client generators (Seeds)
	defSeed  int64
	maxTries int
	// measuring is set while the executor measures: only then do the
	// workers record per-statement results.
	measuring atomic.Bool

	// storeSlots[i]: the variables SQL command i's \gset or \aset sets,
	// a slot per result column (known once a session has prepared it;
	// noSlot for a name no command reads, badName for one that is no
	// variable's name), and storeNames the names.
	once       sync.Once
	storeSlots [][]int
	storeNames [][]string

	// stdout and stderr take the scripts' own output: debug() and the
	// \shell commands' (nil: discarded).
	stdout, stderr io.Writer
	// nulled[slot]: a statement sent the variable as NULL, nothing having
	// set it (noted once a run on stderr).
	nulled []atomic.Bool
}

// stmtKind is what a statement does, for the outcome of a round trip
// that lost its connection.
type stmtKind uint8

const (
	kindRead   stmtKind = iota
	kindCommit          // COMMIT, END: ends a transaction
	kindBegin           // BEGIN, START TRANSACTION
	kindWrite           // may change data outside a transaction block
)

// A column stored by \gset or \aset whose name no command reads is not
// kept (noSlot); one whose name is no variable's fails the command
// (badName), as pgbench fails it.
const (
	noSlot  = -1
	badName = -2
)

// maxPipeline is the most statements a pipeline may hold (one round trip
// of a session).
const maxPipeline = target.MaxQueued

// loadProgram reads and parses the script files. Nothing is connected.
func loadProgram(files []FileSpec, defines []Define, allowShell bool) (*program, error) {
	p := &program{scope: NewScope(), defines: defines, mux: true}
	for i, n := range []string{varScale, varClientID, varRandomSeed, varDefaultSeed} {
		p.builtin[i] = p.scope.Slot(n)
	}
	for _, d := range defines {
		p.scope.Slot(d.Name)
	}
	commands := 0
	for _, f := range files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, errs.Usage("give the path of a pgbench script file (the built-in scripts are in examples/scripts/ of tunebench's source)", "script file %s: %v", f.Path, err)
		}
		if err := textFile(f.Path, b); err != nil {
			return nil, err
		}
		s, err := Parse(f.Path, string(b), p.scope, ParseOptions{AllowShell: allowShell, MaxCommands: maxScriptCommands, Before: commands})
		if err != nil {
			return nil, usageOf(err)
		}
		commands += len(s.Commands)
		s.Weight = f.Weight
		p.total += f.Weight
		sum := sha256.Sum256(b)
		p.sha = append(p.sha, hex.EncodeToString(sum[:]))
		p.texts = append(p.texts, string(b))
		p.scripts = append(p.scripts, s)
	}
	if len(p.scripts) == 0 {
		return nil, errs.Usage("give one or more --file FILE[@WEIGHT]", "no script file")
	}
	if p.total <= 0 {
		return nil, errs.Usage("give at least one script a weight above 0 (FILE@1)", "every script's weight is 0")
	}
	if err := p.compile(); err != nil {
		return nil, err
	}
	p.nulled = make([]atomic.Bool, p.scope.Len())
	p.ops = p.names()
	return p, p.checkVariables()
}

func usageOf(err error) error {
	if pe, ok := err.(*ParseError); ok {
		hint := pe.Hint
		pe.Hint = ""
		return errs.Usage(hint, "%s", pe.Error())
	}
	return errs.Usage("", "%v", err)
}

var (
	commitRe = regexp.MustCompile(`(?i)^\s*(commit|end)\b`)
	beginRe  = regexp.MustCompile(`(?i)^\s*(begin|start)\b`)
	selectRe = regexp.MustCompile(`(?i)^\s*select\b`)
	readRe   = regexp.MustCompile(`(?i)^\s*(select|begin|start|show|values|table|explain|set|savepoint|release|rollback|abort|prepare)\b`)
	spaceRe  = regexp.MustCompile(`\s+`)
)

// compile makes the session statements and checks what the session
// cannot do.
func (p *program) compile() error {
	p.selects = true
	for si, s := range p.scripts {
		ix := make([]int, len(s.Commands))
		queued, inPipe := 0, false
		for ci := range s.Commands {
			c := &s.Commands[ci]
			ix[ci] = -1
			switch c.Kind {
			case CmdSleep, CmdShell, CmdSetShell:
				p.mux = false
			case CmdStartPipeline, CmdSyncPipeline, CmdEndPipeline:
				queued, inPipe = 0, c.Kind != CmdEndPipeline
			case CmdSQL:
				if !c.Compound && (c.SQL == "" || c.SQL == ";") {
					return errs.Usage("remove the lone semicolon", "%s:%d: an empty SQL command", s.Name, c.Line)
				}
				if !c.Compound && c.Uses > maxVarUses {
					// pgbench refuses it in its prepared and extended
					// modes; a compound command goes by the simple
					// protocol, the variables written into its text.
					return errs.Usage(fmt.Sprintf("use at most %d variables in a statement (pgbench's limit: each :name is a parameter of the prepared statement); split the statement, or compute a value with \\set", maxVarUses),
						"%s:%d: the statement uses variables %d times, more than %d", s.Name, c.Line, c.Uses, maxVarUses)
				}
				if inPipe {
					queued++
				}
				if queued > maxPipeline {
					return errs.Usage(fmt.Sprintf("end the pipeline (\\endpipeline or \\syncpipeline) every %d statements at most", maxPipeline),
						"%s:%d: a pipeline of more than %d statements", s.Name, c.Line, maxPipeline)
				}
				if c.Store != StoreNone {
					p.results = true
				}
				ix[ci] = len(p.info)
				p.info = append(p.info, StmtInfo{Script: si, Line: c.Line, Text: spaceRe.ReplaceAllString(strings.TrimSpace(c.Text), " ")})
				if c.Compound {
					p.prep = append(p.prep, -1)
					var kinds []stmtKind
					for _, st := range c.Statements {
						if st = strings.TrimSpace(strings.TrimSuffix(st, ";")); st != "" {
							kinds = append(kinds, kindOf(st))
							p.selects = p.selects && selectRe.MatchString(st)
						}
					}
					p.kinds = append(p.kinds, kinds)
					continue
				}
				sql := strings.TrimSuffix(strings.TrimSpace(c.SQL), ";")
				p.prep = append(p.prep, len(p.stmts))
				p.stmts = append(p.stmts, target.Stmt{Name: "tbs_" + strconv.Itoa(len(p.stmts)), SQL: sql, Params: c.Params, Columns: c.Store != StoreNone})
				p.kinds = append(p.kinds, []stmtKind{kindOf(sql)})
				p.selects = p.selects && selectRe.MatchString(sql)
			}
		}
		p.stmt = append(p.stmt, ix)
	}
	p.perStmt = len(p.info) <= maxStmtResults
	stores := 0
	for _, st := range p.stmts {
		if st.Columns {
			stores++
		}
	}
	if stores > target.MaxPrepared {
		return errs.Usage(fmt.Sprintf("store the results of at most %d statements (each one is prepared on every connection when it connects)", target.MaxPrepared),
			"the scripts store the results of %d statements with \\gset or \\aset", stores)
	}
	return nil
}

// maxStmtResults bounds the SQL commands whose results the workers keep
// each (a latency histogram per command and client): scripts of more
// commands are generated files, whose per-command figures nobody reads
// and whose histograms would take memory in proportion to the file times
// the clients; their runs keep the transactions' figures only.
const maxStmtResults = 1000

// kindOf is what the statement sql does.
func kindOf(sql string) stmtKind {
	switch {
	case commitRe.MatchString(sql):
		return kindCommit
	case beginRe.MatchString(sql):
		return kindBegin
	case !readRe.MatchString(sql):
		return kindWrite
	}
	return kindRead
}

// checkVariables refuses a variable that the scripts read and nothing
// sets: not -D, not a built-in variable, not \set or \setshell. A script
// with \gset or \aset may set any name (its columns'), so it is checked
// when the command runs instead.
func (p *program) checkVariables() error {
	if p.results {
		return nil
	}
	set := make([]bool, p.scope.Len())
	for _, b := range p.builtin {
		set[b] = true
	}
	for _, d := range p.defines {
		i, _ := p.scope.Lookup(d.Name)
		set[i] = true
	}
	for _, s := range p.scripts {
		for _, c := range s.Commands {
			if c.Kind == CmdSet || c.Kind == CmdSetShell {
				set[c.Var] = true
			}
		}
	}
	for i, ok := range set {
		if ok {
			continue
		}
		name := p.scope.Name(i)
		where := ""
		for _, s := range p.scripts {
			for _, c := range s.Commands {
				if usesVar(c.Text, name) {
					where = fmt.Sprintf("%s:%d: ", s.Name, c.Line)
					break
				}
			}
			if where != "" {
				break
			}
		}
		return errs.Usage(fmt.Sprintf("set it with \\set %s ... before its use, or give it with -D %s=VALUE", name, name),
			"%sthe variable :%s is used but never set", where, name)
	}
	return nil
}

// usesVar reports whether text mentions :name.
func usesVar(text, name string) bool {
	for k := 0; ; {
		j := strings.Index(text[k:], ":"+name)
		if j < 0 {
			return false
		}
		end := k + j + 1 + len(name)
		if end == len(text) || !isNameByte(text[end], false) {
			return true
		}
		k = end
	}
}

// start fixes the run's values: the scale, the seed and the clients.
func (p *program) start(scale int64, seed int64, clients, maxTries int) {
	p.scale, p.seed, p.maxTries = scale, uint64(seed), maxTries
	p.clients, p.defSeed = gen.Seeds(p.seed, clients)
}

// columnSlots gives the columns of every \gset and \aset of a prepared
// statement their variables' slots, from the columns sess prepared; once,
// before the run (the workers are made before it starts). The scope does
// not change: a column that no command reads is set nowhere (nothing
// could read it), and a column whose name is not a variable's fails its
// command when it stores, as pgbench fails it (SELECT 1 \gset stores a
// column named ?column?).
func (p *program) columnSlots(sess target.Session) {
	if !p.results {
		return
	}
	p.once.Do(func() {
		p.storeSlots = make([][]int, len(p.info))
		p.storeNames = make([][]string, len(p.info))
		for si, s := range p.scripts {
			for ci, c := range s.Commands {
				i := p.stmt[si][ci]
				if i < 0 || c.Store == StoreNone || p.prep[i] < 0 {
					continue
				}
				for _, name := range sess.Columns(p.prep[i]) {
					p.storeSlots[i] = append(p.storeSlots[i], p.slotOf(c.Prefix+name))
					p.storeNames[i] = append(p.storeNames[i], c.Prefix+name)
				}
			}
		}
	})
}

// slotOf is the slot a stored column's variable has: noSlot when no
// command reads it, badName when name is not a variable's name.
func (p *program) slotOf(name string) int {
	if i, ok := p.scope.Lookup(name); ok {
		return i
	}
	if !validName(name) {
		return badName
	}
	return noSlot
}

// define is the -D value of a variable, if -D gives it.
func (p *program) define(name string) (string, bool) {
	for _, d := range p.defines {
		if d.Name == name {
			return d.Value, true
		}
	}
	return "", false
}

// spec is the session of worker id: a text slot for every variable (sent
// as pgbench sends them, the server inferring the type) and every
// statement.
func (p *program) spec(id int) *target.SessionSpec {
	slots := make([]target.ParamType, p.scope.Len())
	for i := range slots {
		slots[i] = target.Unknown
	}
	return &target.SessionSpec{ID: id, Slots: slots, Stmts: p.stmts, Results: p.results, TextResults: p.results}
}

// names are the scripts' names as shown: the file's base name, made
// unique with the directory when two are the same.
func (p *program) names() []string {
	out := make([]string, len(p.scripts))
	count := map[string]int{}
	for i, s := range p.scripts {
		out[i] = filepath.Base(s.Name)
		count[out[i]]++
	}
	for i, s := range p.scripts {
		if count[out[i]] > 1 {
			out[i] = s.Name
		}
	}
	// The same file twice (with two weights) keeps its position.
	seen := map[string]int{}
	for i := range out {
		seen[out[i]]++
		if seen[out[i]] > 1 {
			out[i] += "#" + strconv.Itoa(seen[out[i]])
		}
	}
	return out
}

// textFile refuses a file that is not UTF-8 text (a binary given by
// mistake: sent to the server, it failed there with a protocol error),
// naming the first byte that is not, by its offset and line.
func textFile(path string, b []byte) error {
	at, what := -1, ""
	if k := bytes.IndexByte(b, 0); k >= 0 {
		at, what = k, "a NUL byte"
	}
	if !utf8.Valid(b) {
		k := 0
		for k < len(b) {
			r, n := utf8.DecodeRune(b[k:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			k += n
		}
		if at < 0 || k < at {
			at, what = k, fmt.Sprintf("byte 0x%02x, not UTF-8", b[k])
		}
	}
	if at < 0 {
		return nil
	}
	line := 1 + bytes.Count(b[:at], []byte("\n"))
	return errs.Usage("give a text file of SQL and meta-commands in UTF-8 (a file in another encoding: convert it, e.g. iconv -f LATIN1 -t UTF-8)",
		"%s is not a text script: offset %d (line %d) is %s", path, at, line, what)
}
