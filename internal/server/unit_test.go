package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/errs"
)

func TestParseSetting(t *testing.T) {
	good := map[string]Setting{
		"work_mem=64MB":                  {"work_mem", "64MB"},
		" Shared_Buffers = 1GB ":         {"shared_buffers", "1GB"},
		"pg_stat_statements.max=10000":   {"pg_stat_statements.max", "10000"},
		"search_path=a, b":               {"search_path", "a, b"},
		"log_line_prefix=%m [%p] a=b ":   {"log_line_prefix", "%m [%p] a=b"},
		"default_transaction_isolation=": {"default_transaction_isolation", ""},
	}
	for in, want := range good {
		got, err := ParseSetting(in)
		if err != nil || got != want {
			t.Errorf("ParseSetting(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "work_mem", "=1", "work mem=1", "a.b.c=1", "1abc=2", "x;drop=1", "a\"b=1", "work_mem=1\n2", "é=1"} {
		_, err := ParseSetting(in)
		if err == nil {
			t.Errorf("ParseSetting(%q) succeeded", in)
			continue
		}
		if errs.KindOf(err) != errs.KindUsage {
			t.Errorf("ParseSetting(%q): kind %v, want usage", in, errs.KindOf(err))
		}
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"work_mem", "_x", "a1", "auto_explain.log_min_duration", "x.y"} {
		if !ValidName(n) {
			t.Errorf("ValidName(%q) = false", n)
		}
	}
	for _, n := range []string{"", "Work_mem", "1a", "a.", ".a", "a.b.c", "a-b", "a b", "a;b", `a"b`, "a.1b", "ümlaut"} {
		if ValidName(n) {
			t.Errorf("ValidName(%q) = true", n)
		}
	}
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	_ = os.Remove(path)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindBinariesExplicit(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "initdb"), "exit 0")
	_, err := FindBinaries(dir)
	if errs.KindOf(err) != errs.KindEnvironment {
		t.Fatalf("missing binaries: got %v (kind %v), want environment error", err, errs.KindOf(err))
	}
	if !strings.Contains(err.Error(), "pg_ctl, postgres") {
		t.Errorf("error does not name the missing programs: %v", err)
	}
	if !strings.Contains(errs.HintOf(err), "--pg-bin") {
		t.Errorf("hint does not mention --pg-bin: %q", errs.HintOf(err))
	}

	writeScript(t, filepath.Join(dir, "pg_ctl"), "exit 0")
	if err := os.WriteFile(filepath.Join(dir, "postgres"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FindBinaries(dir); err == nil || !strings.Contains(err.Error(), "lacks postgres") {
		t.Errorf("non-executable postgres: got %v", err)
	}

	writeScript(t, filepath.Join(dir, "postgres"), `echo "postgres (PostgreSQL) 16.4 (Debian 16.4-1)"`)
	b, err := FindBinaries(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Dir != dir || b.Version != "16.4" || b.Major != 16 {
		t.Errorf("got %+v", b)
	}

	writeScript(t, filepath.Join(dir, "postgres"), `echo "postgres (PostgreSQL) 9.6.24"`)
	if _, err := FindBinaries(dir); errs.KindOf(err) != errs.KindEnvironment || !strings.Contains(err.Error(), "too old") {
		t.Errorf("9.6: got %v", err)
	}

	if _, err := FindBinaries(filepath.Join(dir, "nope")); errs.KindOf(err) != errs.KindEnvironment {
		t.Errorf("missing dir: got %v", err)
	}
}

func TestFindBinariesSearch(t *testing.T) {
	root := t.TempDir()
	mk := func(ver string) string {
		d := filepath.Join(root, "lib", ver, "bin")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		writeScript(t, filepath.Join(d, "initdb"), "exit 0")
		writeScript(t, filepath.Join(d, "pg_ctl"), "exit 0")
		writeScript(t, filepath.Join(d, "postgres"), fmt.Sprintf(`echo "postgres (PostgreSQL) %s.1"`, ver))
		return d
	}
	mk("9")
	mk("13")
	want := mk("16")
	incomplete := filepath.Join(root, "lib", "17", "bin")
	if err := os.MkdirAll(incomplete, 0o755); err != nil {
		t.Fatal(err)
	}
	noPath := func(string) (string, error) { return "", errors.New("not found") }
	f := finder{lookPath: noPath, globRoots: []string{filepath.Join(root, "lib", "*", "bin")}}
	b, err := f.find("")
	if err != nil {
		t.Fatal(err)
	}
	if b.Dir != want || b.Major != 16 {
		t.Errorf("got %+v, want dir %s", b, want)
	}

	// PATH lookup resolves symlinks to the real bin dir.
	links := filepath.Join(root, "links")
	if err := os.MkdirAll(links, 0o755); err != nil {
		t.Fatal(err)
	}
	thirteen := filepath.Join(root, "lib", "13", "bin")
	if err := os.Symlink(filepath.Join(thirteen, "postgres"), filepath.Join(links, "postgres")); err != nil {
		t.Fatal(err)
	}
	f.lookPath = func(name string) (string, error) {
		if name == "postgres" {
			return filepath.Join(links, "postgres"), nil
		}
		return "", errors.New("not found")
	}
	if b, err := f.find(""); err != nil || b.Dir != thirteen {
		t.Errorf("PATH: got %+v, %v; want %s", b, err, thirteen)
	}

	// Nothing found: environment error with the install command.
	osr := filepath.Join(root, "os-release")
	if err := os.WriteFile(osr, []byte("ID=ubuntu\nID_LIKE=debian\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f = finder{lookPath: noPath, globRoots: []string{filepath.Join(root, "none", "*")}, osRelease: osr}
	_, err = f.find("")
	if errs.KindOf(err) != errs.KindEnvironment {
		t.Fatalf("got %v", err)
	}
	if h := errs.HintOf(err); !strings.Contains(h, "apt-get install postgresql") || !strings.Contains(h, "--pg-bin") {
		t.Errorf("hint %q", h)
	}
}

func TestInstallHint(t *testing.T) {
	cases := map[string]string{
		"ID=debian\n": "apt-get install postgresql",
		"ID=linuxmint\nID_LIKE=\"ubuntu debian\"":      "apt-get install postgresql",
		"ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"": "dnf install postgresql-server",
		"ID=fedora\n": "dnf install postgresql-server",
	}
	for in, want := range cases {
		h := installHint(in)
		if !strings.Contains(h, want) || !strings.Contains(h, "--pg-bin") {
			t.Errorf("installHint(%q) = %q", in, h)
		}
	}
	h := installHint("ID=arch\n")
	if !strings.Contains(h, "apt-get install postgresql") || !strings.Contains(h, "dnf install postgresql-server") {
		t.Errorf("unknown OS hint %q", h)
	}
}

func TestSortNewestFirst(t *testing.T) {
	d := []string{"/usr/lib/postgresql/9.6/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/10/bin", "/usr/lib/postgresql/9.5/bin"}
	sortNewestFirst(d)
	want := "/usr/lib/postgresql/16/bin /usr/lib/postgresql/10/bin /usr/lib/postgresql/9.6/bin /usr/lib/postgresql/9.5/bin"
	if got := strings.Join(d, " "); got != want {
		t.Errorf("got %s", got)
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]Binaries{
		"postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n": {Version: "15.18", Major: 15},
		"postgres (PostgreSQL) 17beta1":                          {Version: "17", Major: 17},
		"postgres (PostgreSQL) 9.6.24":                           {Version: "9.6.24", Major: 9},
	} {
		got, err := parseVersion(in)
		if err != nil || got != want {
			t.Errorf("parseVersion(%q) = %+v, %v", in, got, err)
		}
	}
	if _, err := parseVersion("hello"); err == nil {
		t.Error("parseVersion(hello) succeeded")
	}
}

func TestFreePort(t *testing.T) {
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if p <= 0 || p > 65535 {
		t.Fatalf("port %d", p)
	}
	if err := CheckPortFree(p); err != nil {
		t.Fatalf("free port %d reported busy: %v", p, err)
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = CheckPortFree(p)
	if errs.KindOf(err) != errs.KindConnect || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("busy port: %v", err)
	}
	if !strings.Contains(errs.HintOf(err), "--port") {
		t.Errorf("hint %q", errs.HintOf(err))
	}
	if err := CheckPortFree(70000); errs.KindOf(err) != errs.KindUsage {
		t.Errorf("port 70000: %v", err)
	}
}

func strp(s string) *string { return &s }

func TestCheckValue(t *testing.T) {
	workMem := settingInfo{Name: "work_mem", Vartype: "integer", Unit: "kB", MinVal: strp("64"), MaxVal: strp("2147483647")}
	sharedBuffers := settingInfo{Name: "shared_buffers", Vartype: "integer", Unit: "8kB", MinVal: strp("16"), MaxVal: strp("1073741823")}
	timeout := settingInfo{Name: "statement_timeout", Vartype: "integer", Unit: "ms", MinVal: strp("0"), MaxVal: strp("2147483647")}
	cct := settingInfo{Name: "checkpoint_completion_target", Vartype: "real", MinVal: strp("0"), MaxVal: strp("1")}
	maxConn := settingInfo{Name: "max_connections", Vartype: "integer", MinVal: strp("1"), MaxVal: strp("262143")}
	fsync := settingInfo{Name: "fsync", Vartype: "bool"}
	syncCommit := settingInfo{Name: "synchronous_commit", Vartype: "enum", EnumVals: []string{"local", "remote_write", "remote_apply", "on", "off"}}
	iso := settingInfo{Name: "default_transaction_isolation", Vartype: "enum", EnumVals: []string{"serializable", "repeatable read", "read committed", "read uncommitted"}}
	str := settingInfo{Name: "application_name", Vartype: "string"}

	ok := []struct {
		si settingInfo
		v  string
	}{
		{workMem, "64MB"}, {workMem, "65536"}, {workMem, "1GB"}, {workMem, "64kB"}, {workMem, "1.5MB"}, {workMem, "64 MB"},
		{sharedBuffers, "128MB"}, {sharedBuffers, "16384"}, {sharedBuffers, "0x100"},
		{timeout, "5s"}, {timeout, "0"}, {timeout, "1min"}, {timeout, "1h"},
		{cct, "0.9"}, {cct, "1"}, {maxConn, "100"},
		{fsync, "off"}, {fsync, "ON"}, {fsync, "true"}, {fsync, "0"}, {fsync, "y"},
		{syncCommit, "remote_apply"}, {syncCommit, "OFF"}, {syncCommit, "true"},
		{iso, "Repeatable Read"}, {str, "anything 'at' all"},
	}
	for _, c := range ok {
		if err := checkValue(c.si, c.v); err != nil {
			t.Errorf("%s=%q rejected: %v", c.si.Name, c.v, err)
		}
	}
	bad := []struct {
		si       settingInfo
		v, words string
	}{
		{workMem, "banana", "invalid value"},
		{workMem, "64mb", "case-sensitive"},
		{workMem, "5s", "invalid unit"},
		{workMem, "1kB", "out of range"},
		{workMem, "4TB", "out of range"},
		{workMem, "", "invalid value"},
		{sharedBuffers, "64kB", "out of range"},
		{timeout, "10MB", "invalid unit"},
		{cct, "1.5", "out of range"},
		{maxConn, "10MB", "takes no unit"},
		{fsync, "maybe", "boolean"},
		{fsync, "o", "boolean"},
		{syncCommit, "sometimes", "invalid value"},
		{iso, "snapshot", "invalid value"},
		{str, "a\nb", "newline"},
	}
	for _, c := range bad {
		err := checkValue(c.si, c.v)
		if err == nil {
			t.Errorf("%s=%q accepted", c.si.Name, c.v)
			continue
		}
		if errs.KindOf(err) != errs.KindUsage {
			t.Errorf("%s=%q: kind %v", c.si.Name, c.v, errs.KindOf(err))
		}
		if msg := err.Error() + " " + errs.HintOf(err); !strings.Contains(msg, c.words) || !strings.Contains(msg, c.si.Name) {
			t.Errorf("%s=%q: error %q lacks %q or the name", c.si.Name, c.v, msg, c.words)
		}
	}
}

func TestCloseNames(t *testing.T) {
	all := map[string]settingInfo{}
	for _, n := range []string{"shared_buffers", "work_mem", "maintenance_work_mem", "wal_buffers", "temp_buffers", "max_connections", "fsync"} {
		all[n] = settingInfo{Name: n}
	}
	if got := closeNames("shared_bufers", all); len(got) == 0 || got[0] != "shared_buffers" {
		t.Errorf("shared_bufers: %v", got)
	}
	if got := closeNames("work_men", all); len(got) == 0 || got[0] != "work_mem" || len(got) > 3 {
		t.Errorf("work_men: %v", got)
	}
	if got := closeNames("buffers", all); len(got) != 3 {
		t.Errorf("buffers: %v", got)
	}
	if got := closeNames("zzzzzzzzzz", all); len(got) != 0 {
		t.Errorf("zzz: %v", got)
	}
}

func TestPgpass(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pgpass")
	for _, pw := range []string{"simple", `we:ird\pa:ss`, "x-_Y9"} {
		if err := os.WriteFile(path, []byte("other:1:*:u:p\n"+pgpassLine(pw)), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readPgpass(path)
		if err != nil || got != pw {
			t.Errorf("round trip %q: got %q, %v", pw, got, err)
		}
	}
	// A listen address given to an older directory: its line is added,
	// next to 127.0.0.1's (IPv6 colons escaped).
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, pgpassFile), []byte(pgpassLine("s3cret")), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{dir: dir, st: state{Listen: "fd00::5"}}
	if err := s.loadPassword(""); err != nil || s.password != "s3cret" {
		t.Fatalf("loadPassword: %v (%q)", err, s.password)
	}
	if b, _ := os.ReadFile(s.PassFile()); string(b) != "127.0.0.1:*:*:postgres:s3cret\nfd00\\:\\:5:*:*:postgres:s3cret\n" || !pgpassHas(s.PassFile(), "fd00::5") {
		t.Errorf("pgpass after --listen:\n%s", b)
	}
	pw, err := randomPassword()
	if err != nil || len(pw) != 24 || strings.ContainsAny(pw, "+/=:\\") {
		t.Errorf("randomPassword() = len %d, %v", len(pw), err)
	}
}

func TestSocketDir(t *testing.T) {
	if got := socketDir("/tmp/x/data", 5432); got != "/tmp/x/data" {
		t.Errorf("short: %q", got)
	}
	long := "/tmp/" + strings.Repeat("d", 95) + "/data"
	if got := socketDir(long, 5432); got != "" {
		t.Errorf("long path kept: %q", got)
	}
	if got := socketDir("/tmp/a,b/data", 5432); got != "" {
		t.Errorf("comma path kept: %q", got)
	}
}

func TestQuoting(t *testing.T) {
	if got := confQuote(`it's a\b`); got != `'it''s a\\b'` {
		t.Errorf("confQuote: %s", got)
	}
	if got := conninfoQuote("/tmp/x y/pgpass"); got != `'/tmp/x y/pgpass'` {
		t.Errorf("conninfoQuote: %s", got)
	}
	if got := conninfoQuote("/tmp/x/pgpass"); got != "/tmp/x/pgpass" {
		t.Errorf("conninfoQuote: %s", got)
	}
}

func TestMergeApplied(t *testing.T) {
	old := []Applied{{Name: "work_mem", Previous: "4MB", Value: "64MB", HadAuto: false}}
	done := []Applied{{Name: "work_mem", Previous: "64MB", Value: "128MB", HadAuto: true, AutoPrevious: "64MB"}, {Name: "fsync", Previous: "on", Value: "off"}}
	got := mergeApplied(old, done)
	if len(got) != 2 || got[0].Previous != "4MB" || got[0].HadAuto || got[0].Value != "128MB" || got[1].Name != "fsync" {
		t.Errorf("got %+v", got)
	}
}

func TestOfflineRestore(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	auto := "# Do not edit this file manually!\n# It will be overwritten by the ALTER SYSTEM command.\n" +
		"work_mem = '64MB'\nshared_buffers = '160MB'\nrandom_page_cost = '1.1'\n"
	if err := os.WriteFile(filepath.Join(data, "postgresql.auto.conf"), []byte(auto), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{dir: dir}
	err := s.offlineRestore([]Applied{
		{Name: "work_mem", HadAuto: true, AutoPrevious: "8MB"},
		{Name: "shared_buffers"},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(data, "postgresql.auto.conf"))
	want := "# Do not edit this file manually!\n# It will be overwritten by the ALTER SYSTEM command.\n" +
		"random_page_cost = '1.1'\nwork_mem = '8MB'\n"
	if string(b) != want {
		t.Errorf("got\n%s\nwant\n%s", b, want)
	}
}

func TestCheckTraversable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to build a directory another user cannot enter")
	}
	u, err := resolveRunUser("")
	if err != nil {
		t.Skip(err)
	}
	base, err := os.MkdirTemp("/tmp", "tb-trav-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	err = u.checkTraversable(filepath.Join(base, "x", "srv"), "server dir", "choose another --dir")
	if errs.KindOf(err) != errs.KindEnvironment || !strings.Contains(err.Error(), base) || !strings.Contains(errs.HintOf(err), "chmod o+x "+base) {
		t.Fatalf("got %v (hint %q)", err, errs.HintOf(err))
	}
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := u.checkTraversable(filepath.Join(base, "x", "srv"), "server dir", ""); err != nil {
		t.Fatal(err)
	}
}

func TestScrub(t *testing.T) {
	msg := `invalid value for parameter "primary_conninfo": "host=x password=hunter22"`
	if got := scrub("primary_conninfo", "host=x password=hunter22", msg); strings.Contains(got, "hunter22") {
		t.Errorf("secret kept: %s", got)
	}
	if got := scrub("work_mem", "banana", `invalid value "banana"`); got != `invalid value "banana"` {
		t.Errorf("ordinary value masked: %s", got)
	}
}

// TestCheckMemoryWording: the sizes of a refused shared memory are printed
// in binary units (human.Bytes).
func TestCheckMemoryWording(t *testing.T) {
	all := map[string]settingInfo{
		"shared_buffers": {Name: "shared_buffers", Setting: "16384", Unit: "8kB"},
		"wal_buffers":    {Name: "wal_buffers", Setting: "512", Unit: "8kB"},
	}
	err := checkMemory(all, []Setting{{Name: "shared_buffers", Value: "6GB"}}, 4<<30)
	if err == nil {
		t.Fatal("6GB of shared_buffers on 4 GiB accepted")
	}
	if want := "shared_buffers=6GB needs 6.0 GiB of shared memory"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "this machine's 4.0 GiB of memory") {
		t.Errorf("error %q: want %q and the machine's 4.0 GiB", err, want)
	}
	if want := "use a smaller value: the machine has 4.0 GiB of memory, and shared_buffers is usually a quarter of it (1.0 GiB)"; errs.HintOf(err) != want {
		t.Errorf("hint %q, want %q", errs.HintOf(err), want)
	}
	if err := checkMemory(all, []Setting{{Name: "shared_buffers", Value: "1GB"}}, 4<<30); err != nil {
		t.Errorf("1GB on 4 GiB refused: %v", err)
	}
}

// TestRestartError: a failed restart keeps the restarter's kind and fix
// (an interrupt stays an interrupt, a hung command keeps its fix); only
// an unclassified failure becomes a connection error pointing at the
// server's log.
func TestRestartError(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind errs.Kind
		hint string
	}{
		{errs.Wrap(errs.KindInterrupted, context.Canceled, "", "interrupted while the restart command ran"), errs.KindInterrupted, ""},
		{errs.New(errs.KindEnvironment, "the command itself hung", "timed out"), errs.KindEnvironment, "the command itself hung"},
		{errors.New("pg_ctl: server did not start"), errs.KindConnect, "check the server log"},
	} {
		err := restartError(c.err, "restarting to restore %s", "shared_buffers")
		if errs.KindOf(err) != c.kind || errs.HintOf(err) != c.hint || !strings.Contains(err.Error(), "restarting to restore shared_buffers") {
			t.Errorf("%v: kind %v fix %q (%v)", c.err, errs.KindOf(err), errs.HintOf(err), err)
		}
	}
}

// TestStartErrorDiskFull: a start that failed on a full filesystem (its
// log says No space left on device) says so, what may be freed and what
// may not, and how to go on, as an environment error (exit 6).
func TestStartErrorDiskFull(t *testing.T) {
	s := &Server{dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Dir(s.LogPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	log := "LOG:  database system was interrupted; last known up at 2026-11-29 06:00:00 UTC\n" +
		"PANIC:  could not write to file \"pg_wal/xlogtemp.1234\": No space left on device\n"
	if err := os.WriteFile(s.LogPath(), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	err := s.startError("PostgreSQL did not start", errors.New("exit status 1"), nil, 0, false)
	h := errs.HintOf(err)
	if errs.KindOf(err) != errs.KindEnvironment || !strings.Contains(h, "the filesystem of the server's WAL is full") ||
		!strings.Contains(h, "never remove anything in "+s.DataDir()) || !strings.Contains(h, "grow the filesystem") ||
		!strings.Contains(h, "tunebench server start --dir "+s.dir) || !strings.Contains(err.Error(), "No space left on device") {
		t.Errorf("%v (kind %v)\nfix: %s", err, errs.KindOf(err), h)
	}
	// Any other failure keeps the generic fix.
	if err := os.WriteFile(s.LogPath(), []byte("FATAL:  could not create lock file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.startError("PostgreSQL did not start", errors.New("exit status 1"), nil, 0, false); errs.KindOf(err) != errs.KindConnect {
		t.Errorf("another failure: %v (kind %v)", err, errs.KindOf(err))
	}
}
