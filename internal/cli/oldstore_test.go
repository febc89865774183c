package cli_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/store"
)

// TestOldStore: a results store written by the binary before the result
// contract (testdata/oldstore: version 1 summaries, schema migrations 1 and
// 2) still opens, migrates, lists, shows, compares and reports, and every
// command prints what that binary printed (the goldens next to it, made
// with TZ=UTC; TestMain runs the package in UTC).
func TestOldStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	storePath := filepath.Join(dir, "results.db")
	src, err := os.Open(filepath.Join("testdata", "oldstore", "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(storePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()

	f, err := os.Open(filepath.Join("testdata", "oldstore", "commands.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := newHarness(t)
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		code, err := strconv.Atoi(fields[0])
		if err != nil {
			t.Fatalf("commands.txt: %q", sc.Text())
		}
		args := fields[1:]
		for i, a := range args {
			switch {
			case a == "STORE":
				args[i] = storePath
			case i > 0 && args[i-1] == "-o":
				args[i] = filepath.Join(dir, a)
			}
		}
		golden := goldenName(fields[1:])
		want, err := os.ReadFile(filepath.Join("testdata", "oldstore", golden))
		if err != nil {
			t.Fatalf("%s: %v", golden, err)
		}
		r := h.run(args...)
		got := strings.ReplaceAll(r.stdout, dir+string(filepath.Separator), "")
		same := got == string(want)
		switch ch := changed[golden]; {
		case ch.added != "":
			same = strings.Contains(got, "\n"+ch.added+"\n") && subsequence(string(want), got)
		case ch.reordered:
			same = sameLines(string(want), got)
		case ch.column > 0:
			same = withoutColumn(string(want), ch.column-1) == withoutColumn(got, ch.column-1)
		}
		if r.code != code || !same {
			t.Errorf("%s: exit %d (want %d), output differs from %s:\n%s", strings.Join(fields[1:], " "), r.code, code, golden, diffLines(string(want), got))
		}
		if r.stderr != "" {
			t.Errorf("%s: stderr %s", strings.Join(fields[1:], " "), r.stderr)
		}
		n++
	}
	if n < 30 {
		t.Errorf("only %d commands replayed", n)
	}
	// The experiments it started can be resumed: their plans, made by the
	// old binary, are the plans the workloads' declarations make now.
	for name, done := range map[string]int{"old-tpcb": 8, "old-tpcc": 2, "old-fsblog": 2} {
		st, err := store.Open(context.Background(), storePath)
		if err != nil {
			t.Fatal(err)
		}
		e, err := st.GetExperiment(context.Background(), name)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		spec := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(spec, []byte(e.Spec), 0o600); err != nil {
			t.Fatal(err)
		}
		r := h.run("experiment", "run", spec, "--resume", "--dry-run", "--results", storePath)
		if want := "resume: " + strconv.Itoa(done) + " completed runs are kept"; r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("resuming %s made by the old binary: want %q:\n%s", name, want, r)
		}
	}
	// The migrated store says which schema the old summaries have.
	for _, ri := range listRuns(t, storePath) {
		if ri.SummarySchema != 1 {
			t.Errorf("run %d: summary schema %d, want 1", ri.ID, ri.SummarySchema)
		}
	}
}

// changed are the outputs that differ from the old binary's on purpose.
var changed = map[string]struct {
	added     string // every old line is kept, in order; this line was added
	reordered bool   // the same lines, in another order
	// column: the table's column with this index changed on purpose; the
	// rest of every line is the same.
	column int
}{
	// results list's SECONDS is the measured window now, the warm-up
	// apart (issue 41 item 5), not the run's wall time.
	"results-list.txt": {column: 6},
	// results show of a tpcc run now shows its audits: the old binary
	// decoded them as untyped JSON and its type check dropped them.
	"results-show-4.txt":  {added: "audits (clause 9.2 ranges):"},
	"results-show-5.txt":  {added: "audits (clause 9.2 ranges):"},
	"results-show-16.txt": {added: "audits (clause 9.2 ranges):"},
	"results-show-17.txt": {added: "audits (clause 9.2 ranges):"},
	// compare lists tpcc's transactions in the workload's own order (that
	// of its time profile table), not the report's old hard-coded one.
	"compare-4-5.txt": {reordered: true},
}

// subsequence reports whether every line of old appears in got, in order.
func subsequence(old, got string) bool {
	g := strings.Split(got, "\n")
	i := 0
	for _, l := range strings.Split(old, "\n") {
		for i < len(g) && g[i] != l {
			i++
		}
		if i == len(g) {
			return false
		}
		i++
	}
	return true
}

// sameLines reports whether a and b hold the same lines in any order.
func sameLines(a, b string) bool {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	sort.Strings(x)
	sort.Strings(y)
	return strings.Join(x, "\n") == strings.Join(y, "\n")
}

// goldenName is the golden file of a recorded command.
func goldenName(args []string) string {
	switch {
	case args[0] == "results" && args[1] == "list":
		return "results-list.txt"
	case args[0] == "results" && args[1] == "show":
		return "results-show-" + args[2] + ".txt"
	case args[0] == "experiment" && args[1] == "list":
		return "experiment-list.txt"
	case args[0] == "experiment" && args[1] == "show":
		return "experiment-show-" + args[2] + ".txt"
	case args[0] == "compare":
		return "compare-" + args[1] + "-" + args[2] + ".txt"
	case args[0] == "report":
		if _, err := strconv.Atoi(args[1]); err == nil {
			return "report-runs.txt"
		}
		return "report-" + args[1] + ".txt"
	}
	return ""
}

// diffLines shows the lines that differ (want first).
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			b.WriteString("- " + a + "\n+ " + c + "\n")
		}
	}
	return b.String()
}

// withoutColumn is a tabwriter table without its column k (cells are
// separated by two spaces or more).
func withoutColumn(table string, k int) string {
	sep := regexp.MustCompile(`  +`)
	var out []string
	for _, line := range strings.Split(table, "\n") {
		cells := sep.Split(strings.TrimRight(line, " "), -1)
		if k < len(cells) {
			cells = append(cells[:k], cells[k+1:]...)
		}
		out = append(out, strings.Join(cells, "|"))
	}
	return strings.Join(out, "\n")
}
