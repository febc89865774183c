package script

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/workload"
)

func mustParse(t *testing.T, text string) (*Script, *Scope) {
	t.Helper()
	sc := NewScope()
	s, err := Parse("t.sql", text, sc, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, sc
}

// TestBuiltinScriptsParse: pgbench's three built-in transactions, written
// as files (examples/scripts), parse into their \set commands and
// statements with the variables as parameters.
func TestBuiltinScriptsParse(t *testing.T) {
	want := map[string]struct{ sets, sqls int }{"tpcb-like.sql": {4, 7}, "simple-update.sql": {4, 5}, "select-only.sql": {1, 1}}
	for name, w := range want {
		text, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "scripts", name))
		if err != nil {
			t.Fatal(err)
		}
		sc := NewScope()
		s, err := Parse(name, string(text), sc, ParseOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var sets, sqls int
		for _, c := range s.Commands {
			switch c.Kind {
			case CmdSet:
				sets++
			case CmdSQL:
				sqls++
				if strings.Contains(c.SQL, ":") {
					t.Errorf("%s line %d: a variable left in %q", name, c.Line, c.SQL)
				}
			}
		}
		if sets != w.sets || sqls != w.sqls {
			t.Errorf("%s: %d \\set and %d statements, want %d and %d", name, sets, sqls, w.sets, w.sqls)
		}
	}
	s, sc := mustParse(t, "\\set aid random(1, 10)\n\\set delta 5\nUPDATE a SET x = x + :delta WHERE aid = :aid AND :delta > 0;\n")
	c := s.Commands[2]
	if c.SQL != "UPDATE a SET x = x + $1 WHERE aid = $2 AND $1 > 0;" || len(c.Params) != 2 ||
		sc.Name(c.Params[0]) != "delta" || sc.Name(c.Params[1]) != "aid" || c.Line != 3 {
		t.Errorf("statement %+v", c)
	}
}

// TestSQLLexing: statements end at a semicolon outside quotes, dollar
// quotes and comments; they span lines; \; joins statements; casts and
// quoted colons stay.
func TestSQLLexing(t *testing.T) {
	s, _ := mustParse(t, `SELECT 'a;b:c', "x;y", $$ ; :z $$, $f$;$f$ -- ; :w
  , 1::int /* ; :v /* nested */ */ ;
BEGIN \; SELECT :k;
SELECT :k \gset p_
SELECT 1, 2 \aset
\set n :p_k + 1
SELECT 1`)
	if len(s.Commands) != 6 {
		t.Fatalf("%d commands, want 6: %+v", len(s.Commands), s.Commands)
	}
	if c := s.Commands[0]; len(c.Params) != 0 || !strings.Contains(c.SQL, "'a;b:c'") || !strings.Contains(c.SQL, "1::int") || c.Line != 1 {
		t.Errorf("first statement: %q params %v line %d", c.SQL, c.Params, c.Line)
	}
	if c := s.Commands[1]; c.SQL != "BEGIN ; SELECT $1;" || c.Line != 3 || !c.Compound ||
		strings.Join(c.Pieces, "|") != "BEGIN ; SELECT |;" || len(c.VarSlots) != 1 || c.VarNames[0] != "k" ||
		strings.Join(c.Statements, "|") != "BEGIN ;|SELECT $1;" {
		t.Errorf("compound statement %q line %d: pieces %q, variables %q, statements %q", c.SQL, c.Line, c.Pieces, c.VarNames, c.Statements)
	}
	if c := s.Commands[2]; c.Store != StoreGset || c.Prefix != "p_" || c.SQL != "SELECT $1" || c.Line != 4 {
		t.Errorf("gset statement %+v", c)
	}
	if c := s.Commands[3]; c.Store != StoreAset || c.Prefix != "" {
		t.Errorf("aset statement %+v", c)
	}
	if c := s.Commands[5]; c.SQL != "SELECT 1" || c.Line != 7 {
		t.Errorf("last statement, no semicolon: %+v", c)
	}
}

// TestCompoundCommands: \; joins statements into one command, also at
// the start of a command and with empty statements (pgbench sends them as
// one string); each use of a variable is a piece of its own, in order,
// the same variable twice included, and a :: cast stays text.
func TestCompoundCommands(t *testing.T) {
	s, sc := mustParse(t, "\\; SELECT :a::int AS x \\; \\;\nSELECT :b, :a \\aset p_\n\\set y 1\n")
	if len(s.Commands) != 2 {
		t.Fatalf("%d commands, want 2: %+v", len(s.Commands), s.Commands)
	}
	c := s.Commands[0]
	if !c.Compound || c.Store != StoreAset || c.Prefix != "p_" || c.Uses != 3 || c.Line != 1 {
		t.Fatalf("compound %+v", c)
	}
	if got := strings.Join(c.Pieces, "|"); got != "; SELECT |::int AS x ; ;\nSELECT |, |" {
		t.Errorf("pieces %q", got)
	}
	if c.VarSlots[0] != sc.Slot("a") || c.VarSlots[1] != sc.Slot("b") || c.VarSlots[2] != sc.Slot("a") {
		t.Errorf("variables %v %q", c.VarSlots, c.VarNames)
	}
	if got := strings.Join(c.Statements, "|"); got != ";|SELECT $1::int AS x ;|;|SELECT $2, $1" {
		t.Errorf("statements %q", got)
	}
	if s.Commands[1].Kind != CmdSet {
		t.Errorf("the \\set after the compound: %+v", s.Commands[1])
	}
}

// TestSleepUnits: the unit may follow the number without a space, as
// pgbench reads it (\sleep 2ms); a sign-less number or a :variable.
func TestSleepUnits(t *testing.T) {
	for text, want := range map[string][2]int64{
		"\\sleep 2ms": {2, 1000}, "\\sleep 7us": {7, 1}, "\\sleep 3s": {3, 1_000_000}, "\\sleep 5": {5, 1_000_000},
		"\\sleep 4 MS": {4, 1000}, "\\sleep +9ms": {9, 1000}, "\\sleep 0": {0, 1_000_000},
	} {
		s, _ := mustParse(t, text)
		if c := s.Commands[0]; c.Kind != CmdSleep || c.SleepConst != want[0] || c.SleepUnit != want[1] || c.SleepVar != -1 {
			t.Errorf("%s: %d x %d us (var %d), want %d x %d", text, c.SleepConst, c.SleepUnit, c.SleepVar, want[0], want[1])
		}
	}
}

// TestMetaCommands: \sleep, \if chains, continued lines, pipelines.
func TestMetaCommands(t *testing.T) {
	s, sc := mustParse(t, `\set x 1 + \
   2
\sleep 10 ms
\sleep :x
\if :x = 3
SELECT 1;
\elif :x = 4
SELECT 2;
\else
SELECT 3;
\endif
\startpipeline
SELECT 4;
\syncpipeline
SELECT 5;
\endpipeline
`)
	k := func(i int) *Command { return &s.Commands[i] }
	if k(0).Kind != CmdSet || k(0).Expr.String() != "1 +     2" && !strings.HasPrefix(k(0).Expr.String(), "1 +") {
		t.Errorf("continued \\set: %q", k(0).Expr)
	}
	if k(1).Kind != CmdSleep || k(1).SleepConst != 10 || k(1).SleepUnit != 1000 || k(1).Line != 3 {
		t.Errorf("\\sleep 10 ms: %+v", *k(1))
	}
	if k(2).SleepVar != sc.Slot("x") || k(2).SleepUnit != 1_000_000 {
		t.Errorf("\\sleep :x: %+v", *k(2))
	}
	// if(3) SQL(4) elif(5) SQL(6) else(7) SQL(8) endif(9)
	if k(3).Next != 5 || k(5).Next != 7 || k(7).Next != 9 || k(5).End != 9 || k(7).End != 9 {
		t.Errorf("branches: if->%d elif->%d/%d else->%d/%d", k(3).Next, k(5).Next, k(5).End, k(7).Next, k(7).End)
	}
	if k(10).Kind != CmdStartPipeline || k(12).Kind != CmdSyncPipeline || k(14).Kind != CmdEndPipeline {
		t.Errorf("pipeline commands %v %v %v", k(10).Kind, k(12).Kind, k(14).Kind)
	}
}

// TestParseErrors: each names the file, line and column where it can, and
// says what to do.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
		col  int
		want string
	}{
		{"SELECT 1;\n\\set x 1 +", 2, 11, "unexpected end"},
		{"\n\n\\set x random(1)", 3, 8, "wrong number of arguments"},
		{"\\set 1x 5", 1, 0, "invalid variable name"},
		{"\\set x", 1, 0, "needs a variable name and an expression"},
		{"\\sleep 1 h", 1, 0, "unknown \\sleep unit"},
		{"\\sleep x", 1, 0, "invalid \\sleep duration"},
		{"\\sleep 2weeks", 1, 0, "unknown \\sleep unit \"weeks\""},
		{"\\sleep 2ms 3", 1, 0, "invalid \\sleep duration \"2ms\""},
		{"\\sleep -2ms", 1, 0, "invalid \\sleep duration"},
		{"\\sleep ms", 1, 0, "invalid \\sleep duration"},
		{"\\frobnicate", 1, 1, "unknown meta-command \\frobnicate"},
		{"\\shell echo hi", 1, 0, "refused without --allow-shell"},
		{"\\setshell x echo 1", 1, 0, "refused without --allow-shell"},
		{"\\if 1\nSELECT 1;", 1, 0, "without \\endif"},
		{"\\else\n", 1, 0, "without a matching \\if"},
		{"\\endif\n", 1, 0, "without a matching \\if"},
		{"\\if 1\n\\else\n\\elif 2\n\\endif", 3, 0, "after \\else"},
		{"\\startpipeline\nSELECT 1;", 1, 0, "without \\endpipeline"},
		{"\\endpipeline", 1, 0, "outside a pipeline"},
		{"\\startpipeline\n\\sleep 1\n\\endpipeline", 2, 0, "inside a pipeline"},
		// An unterminated quote is placed where it opens, not at the end
		// of the file it swallowed.
		{"SELECT 'abc;\n", 1, 8, "unterminated quoted string"},
		{"SELECT 1;\nSELECT 'it''s;\nSELECT 2;\nSELECT 3;\n", 2, 8, "unterminated quoted string"},
		{"SELECT 1;\n  SELECT \"x;\nSELECT 2;\n", 2, 10, "unterminated quoted identifier"},
		{"SELECT $x$ abc", 1, 8, "unterminated dollar-quoted"},
		{"SELECT 1;\nSELECT /* abc\n\nSELECT 2;", 2, 8, "unterminated comment"},
		{"\\gset", 1, 0, "without a SQL statement"},
		{"SELECT 1 \\gset a b", 1, 0, "one optional prefix"},
		{"-- only a comment\n", 1, 0, "no command"},
	} {
		_, err := Parse("my.sql", c.text, NewScope(), ParseOptions{})
		var pe *ParseError
		if !errors.As(err, &pe) || pe.File != "my.sql" || pe.Line != c.line || pe.Col != c.col || !strings.Contains(pe.Msg, c.want) || pe.Hint == "" {
			t.Errorf("%q: %v (line %d col %d), want %q at line %d col %d with a hint", c.text, err, lineOf(err), colOfP(err), c.want, c.line, c.col)
		}
	}
	// With --allow-shell, \shell and \setshell parse.
	s, err := Parse("my.sql", "\\setshell x echo 1\n\\shell true", NewScope(), ParseOptions{AllowShell: true})
	if err != nil || s.Commands[0].Kind != CmdSetShell || len(s.Commands[0].Args) != 2 || s.Commands[1].Kind != CmdShell {
		t.Errorf("shell commands with AllowShell: %v %+v", err, s)
	}
	// pgbench's limit: 255 words after the meta-command's name.
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("w ", n)) }
	for _, c := range []struct {
		text string
		ok   bool
	}{
		{"\\shell echo " + words(254), true},
		{"\\shell echo " + words(255), false},
		{"\\setshell v echo " + words(253), true},
		{"\\setshell v echo " + words(254), false},
	} {
		_, err := Parse("my.sql", c.text, NewScope(), ParseOptions{AllowShell: true})
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "more than 255") {
			t.Errorf("%d words: %v, want ok %v", len(strings.Fields(c.text)), err, c.ok)
		}
	}
}

func lineOf(err error) int {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Line
	}
	return -1
}

func colOfP(err error) int {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Col
	}
	return -1
}

func TestFileSpecsAndDefines(t *testing.T) {
	for in, want := range map[string]FileSpec{
		"a.sql": {"a.sql", 1}, "a.sql@5": {"a.sql", 5}, "a.sql@0": {"a.sql", 0}, "mail@host.sql": {"mail@host.sql", 1},
	} {
		if got, err := ParseFileSpec(in); err != nil || got != want {
			t.Errorf("ParseFileSpec(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "@3", "a.sql@-1"} {
		if _, err := ParseFileSpec(bad); err == nil {
			t.Errorf("ParseFileSpec(%q) accepted", bad)
		}
	}
	if d, err := ParseDefine("skew=1.5=x"); err != nil || d != (Define{"skew", "1.5=x"}) {
		t.Errorf("ParseDefine: %v %v", d, err)
	}
	for _, bad := range []string{"skew", "=1", "1x=2"} {
		if _, err := ParseDefine(bad); err == nil {
			t.Errorf("ParseDefine(%q) accepted", bad)
		}
	}
}

// TestProgramRefuses: what a session cannot run, and a variable nothing
// sets, are refused before the run, naming the file and line.
func TestProgramRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ script, want string }{
		{"\\startpipeline\nSELECT 1 \\; SELECT 2;\n\\endpipeline\n", "x.sql:2: a compound command (statements joined with \\;) cannot be used in a pipeline"},
		{"\\set i 1\nSELECT least(" + strings.Repeat(":i, ", 255) + ":i);\n", "x.sql:2: the statement uses variables 256 times, more than 255"},
		{"\\set a 1\nSELECT :a + :b;\n", "x.sql:2: the variable :b is used but never set"},
		{"\\shell echo hi\n", "refused without --allow-shell"},
		{"\\startpipeline\n" + strings.Repeat("SELECT 1;\n", maxPipeline+1) + "\\endpipeline\n", "a pipeline of more than 16 statements"},
		{"\\startpipeline\nSELECT 1 AS a \\gset\n\\endpipeline\n", "x.sql:2: \\gset and \\aset cannot be used in a pipeline"},
		{"\\if 1\n\\startpipeline\nSELECT 1;\n\\else\nSELECT 2;\n\\endif\n\\endpipeline\n", "x.sql:4: \\else with a pipeline opened or closed"},
	} {
		f := filepath.Join(dir, "x.sql")
		if err := os.WriteFile(f, []byte(c.script), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadProgram([]FileSpec{{f, 1}}, nil, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.script, err, c.want)
		}
	}
	// 255 uses are fine, and so are more in a compound command (sent as
	// text, as pgbench's simple mode sends it).
	for _, text := range []string{
		"\\set i 1\nSELECT least(" + strings.Repeat(":i, ", 254) + ":i);\n",
		"\\set i 1\nSELECT 1 \\; SELECT least(" + strings.Repeat(":i, ", 299) + ":i);\n",
	} {
		f := filepath.Join(dir, "uses.sql")
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadProgram([]FileSpec{{f, 1}}, nil, false); err != nil {
			t.Errorf("%d uses: %v", strings.Count(text, ":i"), err)
		}
	}
	// More than 16 statements outside a pipeline are fine.
	many := filepath.Join(dir, "many.sql")
	if err := os.WriteFile(many, []byte(strings.Repeat("SELECT 1;\n", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadProgram([]FileSpec{{many, 1}}, nil, false); err != nil {
		t.Errorf("40 statements: %v", err)
	}
	f := filepath.Join(dir, "ok.sql")
	if err := os.WriteFile(f, []byte("SELECT :x, :scale, :client_id;\n\\sleep 1 ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := loadProgram([]FileSpec{{f, 1}}, []Define{{"x", "3"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.mux {
		t.Error("a script with \\sleep is multiplexed")
	}
	if _, err := loadProgram([]FileSpec{{f, 0}}, []Define{{"x", "3"}}, false); err == nil || !strings.Contains(err.Error(), "weight is 0") {
		t.Errorf("all weights 0: %v", err)
	}
	if _, err := loadProgram([]FileSpec{{filepath.Join(dir, "missing.sql"), 1}}, nil, false); err == nil || !strings.Contains(err.Error(), "missing.sql") {
		t.Errorf("missing file: %v", err)
	}
}

// TestFollowServerAuto: auto follows the server processes when every
// statement is a SELECT (as tpcb's select-only), not otherwise.
func TestFollowServerAuto(t *testing.T) {
	dir := t.TempDir()
	for text, want := range map[string]bool{
		"\\set aid random(1, 10)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n": true,
		"BEGIN;\nSELECT 1;\nEND;\n":                    false,
		"select 1;\nUPDATE t SET x = 1 WHERE false;\n": false,
	} {
		f := filepath.Join(dir, "f.sql")
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := loadProgram([]FileSpec{{f, 1}}, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		for mode, w := range map[string]bool{"auto": want, "on": true, "off": false} {
			r := &scriptRun{prog: p, p: params{TxParams: workload.TxParams{FollowServer: mode}}}
			if got := r.follow(); got != w {
				t.Errorf("%q with %s: follow %v, want %v", text, mode, got, w)
			}
		}
	}
}

// TestRebaseFiles: relative script paths join the experiment file's
// directory, each keeping its weight as written; absolute ones stay.
func TestRebaseFiles(t *testing.T) {
	if got := rebaseFiles("a.sql@05,/abs/b.sql@2,c@d.sql", "exp"); got != "exp/a.sql@05,/abs/b.sql@2,exp/c@d.sql" {
		t.Errorf("rebaseFiles: %q", got)
	}
	if got := rebasePath("init.sql", "exp"); got != "exp/init.sql" || rebasePath("", "exp") != "" || rebasePath("/x.sql", "exp") != "/x.sql" {
		t.Errorf("rebasePath: %q", got)
	}
}

// TestHugeScriptRefused: a script file of a million commands is refused
// when it is read, naming the limit and the line over it, after reading
// no more of it than the limit; the memory allocated on the way stays
// under a bound (measured: 205 MB, the 14 MB file read and turned into
// a string, and the 100,000 commands compiled, in 0.3 s).
// Not parallel: the allocation count is the process's.
func TestHugeScriptRefused(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1000000; i++ {
		fmt.Fprintf(&b, "SELECT %d;\n", i)
	}
	path := filepath.Join(t.TempDir(), "huge.sql")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := loadProgram([]FileSpec{{Path: path, Weight: 1}}, nil, false)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(err.Error(), "huge.sql:100001: the scripts have more than 100000 commands") ||
		!strings.Contains(errs.HintOf(err), "at most 100000") {
		t.Fatalf("a million commands: %v (hint %q)", err, errs.HintOf(err))
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("refused in %s, %d MB allocated", took.Round(time.Millisecond), alloc>>20)
	if alloc > 400<<20 {
		t.Errorf("%d MB allocated reading a script refused at 100,000 commands, over the bound of 400 MB", alloc>>20)
	}
	// Statements whose results are stored are prepared at connect: at
	// most target.MaxPrepared of them.
	b.Reset()
	for i := 0; i < 1001; i++ {
		fmt.Fprintf(&b, "SELECT %d AS a \\gset\n", i)
	}
	gsets := filepath.Join(t.TempDir(), "gsets.sql")
	if err := os.WriteFile(gsets, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadProgram([]FileSpec{{Path: gsets, Weight: 1}}, nil, false); err == nil || !strings.Contains(err.Error(), "store the results of 1001 statements") {
		t.Errorf("1,001 \\gset statements: %v", err)
	}
	b.Reset()
	// Two files together: the limit is the run's.
	half := filepath.Join(t.TempDir(), "half.sql")
	for i := 0; i < 60000; i++ {
		fmt.Fprintf(&b, "SELECT %d;\n", i)
	}
	if err := os.WriteFile(half, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadProgram([]FileSpec{{Path: half, Weight: 1}}, nil, false); err != nil {
		t.Errorf("60,000 commands: %v", err)
	}
	if _, err := loadProgram([]FileSpec{{Path: half, Weight: 1}, {Path: half, Weight: 1}}, nil, false); err == nil || !strings.Contains(err.Error(), "half.sql:40001: the scripts have more than 100000 commands") {
		t.Errorf("two files of 60,000 commands: %v", err)
	}
}

// TestBinaryScriptRefused: a binary file (or one not in UTF-8) given as a
// script is refused when it is read, naming the file, the offset and the
// line of the first byte that is not text.
func TestBinaryScriptRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"nul.sql", []byte("SELECT 1;\nSELECT 2\x00;\n"), "offset 18 (line 2) is a NUL byte"},
		{"latin1.sql", []byte("SELECT 1;\nSELECT 'caf\xe9';\n"), "offset 21 (line 2) is byte 0xe9, not UTF-8"},
		{"elf", []byte("\x7fELF\x02\x01\x01\x00\x00"), "offset 7 (line 1) is a NUL byte"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, c.body, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadProgram([]FileSpec{{Path: path, Weight: 1}}, nil, false)
		if errs.KindOf(err) != errs.KindUsage || !strings.Contains(err.Error(), path+" is not a text script: "+c.want) || !strings.Contains(errs.HintOf(err), "UTF-8") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	ok := filepath.Join(dir, "ok.sql")
	if err := os.WriteFile(ok, []byte("SELECT 'café';\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadProgram([]FileSpec{{Path: ok, Weight: 1}}, nil, false); err != nil {
		t.Errorf("a UTF-8 script: %v", err)
	}
}
