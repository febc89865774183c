package script

import (
	"fmt"
	"strconv"
	"strings"
)

// A script file in pgbench's format (PostgreSQL 10 and later, the pgbench
// documentation, "Custom Scripts"): SQL commands, each ending at a
// semicolon outside quotes, dollar quotes and comments (so one may span
// lines; "\;" joins statements into one compound command sent at once),
// and meta-commands, each a line starting with a backslash (continued on
// the next line when it ends with one). In SQL, :name stands for the
// variable's value, sent as a parameter of the prepared statement;
// "::type" casts, and colons in quotes and comments, are left alone.

// CmdKind is what a command does.
type CmdKind uint8

const (
	CmdSQL CmdKind = iota
	CmdSet
	CmdSleep
	CmdIf
	CmdElif
	CmdElse
	CmdEndif
	CmdShell
	CmdSetShell
	CmdStartPipeline
	CmdSyncPipeline
	CmdEndPipeline
)

// Result storage of a SQL command: \gset keeps the last statement's one
// row, \aset every row of every statement (the last row wins).
const (
	StoreNone = iota
	StoreGset
	StoreAset
)

// Command is one command of a script.
type Command struct {
	Kind CmdKind
	Line int    // where it starts in the file (1-based)
	Text string // as written (SQL: the statement text, without the terminator)

	// CmdSQL.
	SQL    string // with $1..$n for the variables
	Params []int  // the variables' slots, for $1..$n
	Store  int    // StoreNone, StoreGset, StoreAset
	Prefix string // the \gset or \aset prefix
	// Uses counts the variables' uses (:name), each one a parameter in
	// pgbench's prepared and extended modes, which accept at most
	// maxVarUses.
	Uses int
	// Compound: statements joined with \; (one command, several
	// statements), sent by the simple query protocol as pgbench's default
	// mode sends every command: Pieces are the text around the variables'
	// uses, Uses[i] between Pieces[i] and Pieces[i+1] (VarSlots[i], named
	// VarNames[i]).
	Compound bool
	Pieces   []string
	VarSlots []int
	VarNames []string
	// Statements are a compound command's statements (the text between
	// the \;, placeholders for the variables), for what they do.
	Statements []string

	Var  int   // CmdSet, CmdSetShell: the variable's slot
	Expr *Expr // CmdSet, CmdIf, CmdElif

	// CmdSleep: a constant (SleepVar < 0) or a variable, times SleepUnit
	// microseconds.
	SleepConst int64
	SleepVar   int
	SleepUnit  int64

	Args []string // CmdShell, CmdSetShell: the command's words
	// ArgSlots: per word, the variable's slot for a :name word, -1 for
	// a literal word (::x is the word :x).
	ArgSlots []int

	// CmdIf, CmdElif, CmdElse: the command to go to when the branch is
	// not taken (the next \elif, \else or the \endif).
	Next int
	// CmdElif, CmdElse (reached at the end of a taken branch): the \endif.
	End int
}

// Script is a parsed script file.
type Script struct {
	Name     string
	Weight   int
	Commands []Command
}

// ParseError is a script that does not parse: the file, line and column,
// what is wrong and how to fix it.
type ParseError struct {
	File      string
	Line, Col int
	Msg, Hint string
}

func (e *ParseError) Error() string {
	s := fmt.Sprintf("%s:%d", e.File, e.Line)
	if e.Col > 0 {
		s += fmt.Sprintf(":%d", e.Col)
	}
	s += ": " + e.Msg
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// pgbench's limits (MAX_ARGS, 256 words of a command, the first being the
// SQL text or the meta-command's name): at most 255 uses of variables in a
// prepared statement (its parameters; the documentation's "up to 255
// variable uses in one statement") and 255 words after \shell or
// \setshell. Scripts over them are refused when they are read, as pgbench
// refuses them.
const (
	maxVarUses   = 255
	maxShellArgs = 255
)

// Options of the parser.
type ParseOptions struct {
	// AllowShell accepts \shell and \setshell (they run commands on the
	// driver's machine).
	AllowShell bool
	// MaxCommands refuses a script that takes the run's scripts over
	// that many commands (0: no limit), at the first one over it, Before
	// being those of the files read before it (maxScriptCommands).
	MaxCommands, Before int
}

// maxScriptCommands bounds the commands of a run's scripts. Every
// command is compiled before the first transaction, at about half a
// kilobyte of memory and 10 us each: a file of 1.38 million commands took
// 12 s and 800 MB before it could start. 100,000 commands start within a
// second or two. (The sessions themselves prepare at first use beyond
// target.MaxPrepared statements, and keep no per-command results beyond
// maxStmtResults.)
const maxScriptCommands = 100000

// Parse parses the script text read from file name; variables get their
// slots in scope.
func Parse(name, text string, scope *Scope, o ParseOptions) (*Script, error) {
	p := &scriptParser{name: name, src: text, scope: scope, line: 1, o: o}
	if err := p.parse(); err != nil {
		return nil, err
	}
	if len(p.s.Commands) == 0 {
		return nil, &ParseError{File: name, Line: 1, Msg: "the script has no command", Hint: "a script needs at least one SQL statement or meta-command"}
	}
	if err := p.link(); err != nil {
		return nil, err
	}
	p.s.Name = name
	return &p.s, nil
}

type scriptParser struct {
	name  string
	src   string
	pos   int
	line  int
	scope *Scope
	o     ParseOptions
	s     Script
}

func (p *scriptParser) errf(line, col int, hint, format string, a ...any) error {
	return &ParseError{File: p.name, Line: line, Col: col, Msg: fmt.Sprintf(format, a...), Hint: hint}
}

// parse reads commands until the end of the text.
func (p *scriptParser) parse() error {
	for {
		// Skip blanks and comments between commands.
		for p.pos < len(p.src) {
			c := p.src[p.pos]
			switch {
			case c == '\n':
				p.line++
				p.pos++
			case isSpace(c):
				p.pos++
			case strings.HasPrefix(p.src[p.pos:], "--"):
				for p.pos < len(p.src) && p.src[p.pos] != '\n' {
					p.pos++
				}
			default:
				goto cmd
			}
		}
		return nil
	cmd:
		if p.src[p.pos] == '\\' && !strings.HasPrefix(p.src[p.pos:], "\\;") {
			if err := p.meta(); err != nil {
				return err
			}
			if err := p.tooMany(); err != nil {
				return err
			}
			continue
		}
		if err := p.sql(); err != nil {
			return err
		}
		if err := p.tooMany(); err != nil {
			return err
		}
	}
}

// tooMany refuses the command just read when it is one over
// o.MaxCommands.
func (p *scriptParser) tooMany() error {
	if p.o.MaxCommands <= 0 || p.o.Before+len(p.s.Commands) <= p.o.MaxCommands {
		return nil
	}
	c := p.s.Commands[len(p.s.Commands)-1]
	return p.errf(c.Line, 0, fmt.Sprintf("a run compiles every command of its scripts before the first transaction (about half a kilobyte and 10 microseconds each), so it takes at most %d in all; write a shorter script that repeats its work with \\set and \\if, or run the file with psql", p.o.MaxCommands),
		"the scripts have more than %d commands", p.o.MaxCommands)
}

// metaWord returns the meta-command's name at the start of s and its
// length.
func metaWord(s string) (string, int) {
	j := 0
	for j < len(s) && !isSpace(s[j]) && s[j] != '\\' {
		j++
	}
	return s[:j], j
}

// metaLine reads the meta-command line at p.pos (after the backslash),
// joining lines that end with a backslash, and returns its name and the
// rest.
func (p *scriptParser) metaLine() (name, rest string, line int) {
	line = p.line
	s := p.src
	i := p.pos + 1
	var b strings.Builder
	for i < len(s) && s[i] != '\n' {
		if s[i] == '\\' && (i+1 == len(s) || s[i+1] == '\n' || s[i+1] == '\r' && i+2 < len(s) && s[i+2] == '\n') {
			// Continued on the next line.
			for i < len(s) && s[i] != '\n' {
				i++
			}
			if i < len(s) {
				i++
				p.line++
			}
			b.WriteByte(' ')
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	p.pos = i
	text := b.String()
	w, n := metaWord(text)
	return strings.ToLower(w), strings.TrimSpace(text[n:]), line
}

// store reads the \gset or \aset after a SQL command.
func (p *scriptParser) store(c *Command) error {
	name, rest, line := p.metaLine()
	c.Store = StoreGset
	if name == "aset" {
		c.Store = StoreAset
	}
	if f := strings.Fields(rest); len(f) > 1 {
		return p.errf(line, 0, "give at most one prefix", "\\%s takes one optional prefix, got %q", name, rest)
	} else if len(f) == 1 {
		if !validName(f[0]) {
			return p.errf(line, 0, "a prefix is letters, digits and underscores, not starting with a digit", "invalid \\%s prefix %q", name, f[0])
		}
		c.Prefix = f[0]
	}
	if c.SQL == "" {
		return p.errf(line, 0, "put \\"+name+" right after the SQL statement whose result it stores", "\\%s without a SQL statement before it", name)
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], i == 0) {
			return false
		}
	}
	return true
}

// meta reads a meta-command.
func (p *scriptParser) meta() error {
	name, rest, line := p.metaLine()
	c := Command{Line: line, Text: strings.TrimSpace("\\" + name + " " + rest), Var: -1, SleepVar: -1}
	args := strings.Fields(rest)
	switch name {
	case "set":
		if len(args) < 2 {
			return p.errf(line, 0, "write \\set NAME EXPRESSION, e.g. \\set aid random(1, 100000 * :scale)", "\\set needs a variable name and an expression")
		}
		if !validName(args[0]) {
			return p.errf(line, 0, "a variable name is letters, digits and underscores, not starting with a digit", "invalid variable name %q", args[0])
		}
		exprText := strings.TrimSpace(rest[len(args[0]):])
		e, err := ParseExpr(exprText, p.scope)
		if err != nil {
			return p.exprErr(line, rest, exprText, err)
		}
		c.Kind, c.Var, c.Expr = CmdSet, p.scope.Slot(args[0]), e
	case "sleep":
		if len(args) == 1 && !strings.HasPrefix(args[0], ":") {
			// A number and its unit written together (\sleep 2ms), as
			// pgbench reads them: the digits, then the unit.
			k := 0
			if k < len(args[0]) && args[0][k] == '+' {
				k++
			}
			for k < len(args[0]) && args[0][k] >= '0' && args[0][k] <= '9' {
				k++
			}
			if k > 0 && k < len(args[0]) && args[0][k-1] >= '0' && args[0][k-1] <= '9' {
				args = []string{args[0][:k], args[0][k:]}
			}
		}
		if len(args) < 1 || len(args) > 2 {
			return p.errf(line, 0, "write \\sleep N [us|ms|s], N an integer or a :variable", "\\sleep takes a duration and an optional unit")
		}
		if strings.HasPrefix(args[0], ":") {
			if !validName(args[0][1:]) {
				return p.errf(line, 0, "write :name", "invalid variable %q in \\sleep", args[0])
			}
			c.SleepVar = p.scope.Slot(args[0][1:])
		} else {
			n, err := strconv.ParseInt(strings.TrimPrefix(args[0], "+"), 10, 64)
			if err != nil || n < 0 {
				return p.errf(line, 0, "give a whole number of units, or a :variable", "invalid \\sleep duration %q", args[0])
			}
			c.SleepConst = n
		}
		c.Kind, c.SleepUnit = CmdSleep, 1_000_000
		if len(args) == 2 {
			switch strings.ToLower(args[1]) {
			case "us":
				c.SleepUnit = 1
			case "ms":
				c.SleepUnit = 1000
			case "s":
			default:
				return p.errf(line, 0, "use us, ms or s", "unknown \\sleep unit %q", args[1])
			}
		}
	case "if", "elif":
		if rest == "" {
			return p.errf(line, 0, "write \\"+name+" EXPRESSION", "\\%s needs a condition", name)
		}
		e, err := ParseExpr(rest, p.scope)
		if err != nil {
			return p.exprErr(line, rest, rest, err)
		}
		c.Kind, c.Expr = CmdIf, e
		if name == "elif" {
			c.Kind = CmdElif
		}
	case "else", "endif":
		if rest != "" {
			return p.errf(line, 0, "remove what follows it", "\\%s takes no argument, got %q", name, rest)
		}
		c.Kind = CmdElse
		if name == "endif" {
			c.Kind = CmdEndif
		}
	case "shell", "setshell":
		if !p.o.AllowShell {
			return p.errf(line, 0, "it runs a command on this machine for every transaction; give --allow-shell if you mean it",
				"\\%s is refused without --allow-shell", name)
		}
		min := 1
		if name == "setshell" {
			min = 2
		}
		if len(args) < min {
			return p.errf(line, 0, "write \\"+name+" "+map[string]string{"shell": "COMMAND [ARG...]", "setshell": "NAME COMMAND [ARG...]"}[name], "\\%s needs a command", name)
		}
		if len(args) > maxShellArgs {
			return p.errf(line, 0, fmt.Sprintf("put the command line in a shell script and run that (pgbench takes at most %d words after \\%s)", maxShellArgs, name),
				"\\%s has %d arguments, more than %d", name, len(args), maxShellArgs)
		}
		c.Kind, c.Args = CmdShell, args
		if name == "setshell" {
			if !validName(args[0]) {
				return p.errf(line, 0, "a variable name is letters, digits and underscores", "invalid variable name %q", args[0])
			}
			c.Kind, c.Var, c.Args = CmdSetShell, p.scope.Slot(args[0]), args[1:]
		}
		for _, a := range c.Args {
			slot := -1
			if strings.HasPrefix(a, ":") && !strings.HasPrefix(a, "::") {
				if !validName(a[1:]) {
					return p.errf(line, 0, "write :name for a variable, ::word for a word starting with a colon", "invalid variable %q in \\%s", a, name)
				}
				slot = p.scope.Slot(a[1:])
			}
			c.ArgSlots = append(c.ArgSlots, slot)
		}
	case "startpipeline", "syncpipeline", "endpipeline":
		if rest != "" {
			return p.errf(line, 0, "remove what follows it", "\\%s takes no argument, got %q", name, rest)
		}
		c.Kind = map[string]CmdKind{"startpipeline": CmdStartPipeline, "syncpipeline": CmdSyncPipeline, "endpipeline": CmdEndPipeline}[name]
	case "gset", "aset":
		return p.errf(line, 0, "put \\"+name+" right after the SQL statement whose result it stores (on its last line)", "\\%s without a SQL statement before it", name)
	case "":
		return p.errf(line, 1, "a meta-command is a backslash and its name, e.g. \\set", "empty meta-command")
	default:
		return p.errf(line, 1, "the meta-commands are \\set, \\sleep, \\if, \\elif, \\else, \\endif, \\gset, \\aset, \\shell, \\setshell, \\startpipeline, \\syncpipeline and \\endpipeline",
			"unknown meta-command \\%s", name)
	}
	p.s.Commands = append(p.s.Commands, c)
	return nil
}

// exprErr places an expression's syntax error in the line.
func (p *scriptParser) exprErr(line int, rest, exprText string, err error) error {
	col := 0
	if se, ok := err.(*SyntaxError); ok {
		// Column in the file's line: where the expression starts in the
		// meta-command (approximate for continued lines).
		if k := strings.Index(p.lineText(line), exprText); k >= 0 {
			col = k + se.Col
		}
	}
	return p.errf(line, col, "see the expression syntax in pgbench's documentation (docs/scripts.md)", "%v in %q", err, exprText)
}

func (p *scriptParser) lineText(n int) string {
	lines := strings.Split(p.src, "\n")
	if n-1 < len(lines) {
		return lines[n-1]
	}
	return ""
}

// link checks that \if ... \endif blocks nest and do not cross pipeline
// bounds, and sets where each branch goes when not taken.
func (p *scriptParser) link() error {
	cmds := p.s.Commands
	type open struct{ at, last, pipe int } // the \if, the last branch, the pipeline open at the \if
	var stack []open
	pipe := -1
	for i := range cmds {
		c := &cmds[i]
		switch c.Kind {
		case CmdIf:
			stack = append(stack, open{i, i, pipe})
		case CmdElif, CmdElse:
			if len(stack) == 0 {
				return p.errf(c.Line, 0, "add the \\if it belongs to", "%s without a matching \\if", c.Text)
			}
			top := &stack[len(stack)-1]
			if top.pipe != pipe {
				return p.errf(c.Line, 0, "start and end the pipeline inside the branch, or around the whole \\if", "%s with a pipeline opened or closed in the branch before it", c.Text)
			}
			if cmds[top.last].Kind == CmdElse {
				return p.errf(c.Line, 0, "\\else must be the last branch of its \\if", "%s after \\else", c.Text)
			}
			cmds[top.last].Next = i
			top.last = i
		case CmdEndif:
			if len(stack) == 0 {
				return p.errf(c.Line, 0, "remove it or add the \\if it closes", "\\endif without a matching \\if")
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top.pipe != pipe {
				return p.errf(c.Line, 0, "start and end the pipeline inside the branch, or around the whole \\if", "\\endif with a pipeline opened or closed in the branch before it")
			}
			cmds[top.last].Next = i
			for j := top.at; j <= i; j++ {
				if (cmds[j].Kind == CmdElif || cmds[j].Kind == CmdElse) && cmds[j].End == 0 && j > top.at {
					cmds[j].End = i
				}
			}
		case CmdStartPipeline:
			if pipe >= 0 {
				return p.errf(c.Line, 0, "end the first pipeline with \\endpipeline", "\\startpipeline inside a pipeline")
			}
			pipe = i
		case CmdSyncPipeline, CmdEndPipeline:
			if pipe < 0 {
				return p.errf(c.Line, 0, "start it with \\startpipeline", "%s outside a pipeline", c.Text)
			}
			if c.Kind == CmdEndPipeline {
				pipe = -1
			}
		case CmdSleep, CmdShell, CmdSetShell:
			if pipe >= 0 {
				return p.errf(c.Line, 0, "move it out of the pipeline", "%s inside a pipeline", c.Text)
			}
		case CmdSQL:
			if pipe >= 0 && c.Compound {
				return p.errf(c.Line, 0, "split it into one statement per command (each ending with ;), or move it out of the pipeline: a pipeline sends prepared statements, one statement each, and pgbench sends a compound command only by the simple query protocol, which has no pipeline",
					"a compound command (statements joined with \\;) cannot be used in a pipeline")
			}
			if pipe >= 0 && c.Store != StoreNone {
				return p.errf(c.Line, 0, "move the statement out of the pipeline, or drop its \\gset/\\aset: its result is not read before the pipeline ends (pgbench refuses it too)",
					"\\gset and \\aset cannot be used in a pipeline")
			}
		}
	}
	if len(stack) > 0 {
		c := cmds[stack[len(stack)-1].at]
		return p.errf(c.Line, 0, "close it with \\endif", "%s without \\endif", c.Text)
	}
	if pipe >= 0 {
		return p.errf(cmds[pipe].Line, 0, "close it with \\endpipeline", "\\startpipeline without \\endpipeline")
	}
	return nil
}
