package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/store"
)

// A store whose filesystem fills during the run (after the check before it)
// cannot save the result (issue 16, item 6: the result was lost, no summary
// printed). The result goes to a rescue file, in the working directory when
// the store's own directory is full; the summary is printed and the error
// gives the import command; `results import` brings the run in, the same,
// once only; a bad file is one error with its fix.
//
// The store is on a small tmpfs (mounting needs root) filled once the run
// measures. Not parallel: it changes the working directory.
func TestRunRescuedWhenStoreFills(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	h := newHarness(t)
	srv := pg.Server(t)
	db := loadedDB(h, srv)

	full := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", full).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", full).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", full, err, out)
		}
	})
	wd := t.TempDir()
	t.Chdir(wd)
	dbPath := filepath.Join(full, "results.db")

	rn := h.start(nil, "run", "tpcb", "--server-dir", srv.Dir(), "-d", db, "--results", dbPath, "-T", "3s", "--clients", "2")
	rn.waitStderr(t, "progress:", 30*time.Second) // checked, opened, measuring
	fill, err := os.Create(filepath.Join(full, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := fill.Write(chunk); err != nil {
			break
		}
	}
	fill.Close()
	r := <-rn.done

	// (a) exit 1 as before (the save's error, the run itself was fine), the
	// summary printed, the file named with the command that imports it.
	if r.code != 1 {
		t.Fatalf("want exit 1:\n%s", r)
	}
	m := regexp.MustCompile(`written to (\S+\.rescue-\d{8}T\d{6}Z-tpcb\.json)\n`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no rescue file named:\n%s", r)
	}
	rescue := m[1]
	if filepath.Dir(rescue) != wd {
		t.Errorf("rescue file %s, want it in the working directory %s (the store's is full)", rescue, wd)
	}
	for _, want := range []string{"the run (status ok) was not stored", "database or disk is full",
		"fix: bring it in once the store is repaired or has room, or into another store: tunebench results import " + rescue + " --results " + dbPath + "\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "tps") || !strings.Contains(r.stdout, "NOT stored in "+dbPath+" (saving failed): the result is in "+rescue) {
		t.Errorf("no summary, or it does not say where the result is:\n%s", r)
	}
	if runs := listRuns(t, dbPath); len(runs) != 0 {
		t.Errorf("the full store has runs: %+v", runs)
	}
	resc, err := store.ReadRescue(rescue)
	if err != nil {
		t.Fatal(err)
	}
	if len(resc.Run.Series) == 0 || len(resc.Run.Histograms) == 0 || len(resc.Run.Env) < 10 || len(resc.Run.Params) < 10 {
		t.Errorf("the rescue file is not the whole result: %d points, %d histograms, env %s, params %s",
			len(resc.Run.Series), len(resc.Run.Histograms), resc.Run.Env, resc.Run.Params)
	}

	// (b) imported into a good store: the same summary, series and
	// histograms as the rescue file holds, and the same view as printed.
	good := tempPath(t, "good.db")
	imp := h.must(0, "results", "import", rescue, "--results", good)
	if !strings.Contains(imp.stdout, "imported as run 1 in "+good+" (tpcb, status ok: ") ||
		!strings.Contains(imp.stdout, rescue+" may be removed now") {
		t.Errorf("import output:\n%s", imp)
	}
	if _, err := os.Stat(rescue); err != nil {
		t.Errorf("the rescue file was removed: %v", err)
	}
	exp := h.must(0, "results", "export", "1", "--format", "json", "--results", good)
	var doc struct {
		Summary    map[string]any      `json:"summary"`
		Env        map[string]any      `json:"env"`
		Series     map[string][][2]any `json:"series"`
		Histograms []struct {
			Op, Class, Kind, Data string
		} `json:"histograms"`
	}
	if err := json.Unmarshal([]byte(exp.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	var rescued map[string]any
	json.Unmarshal(resc.Run.Summary, &rescued)
	if doc.Summary["run_id"] != 1.0 || rescued["run_id"] != 0.0 {
		t.Errorf("run ids: imported %v, rescued %v", doc.Summary["run_id"], rescued["run_id"])
	}
	delete(doc.Summary, "run_id")
	delete(rescued, "run_id")
	if a, b := mustJSON(t, doc.Summary), mustJSON(t, rescued); !bytes.Equal(a, b) {
		t.Errorf("imported summary\n%s\nrescued\n%s", a, b)
	}
	var envWant map[string]any
	json.Unmarshal(resc.Run.Env, &envWant)
	if a, b := mustJSON(t, doc.Env), mustJSON(t, envWant); !bytes.Equal(a, b) {
		t.Errorf("imported environment differs:\n%s\n%s", a, b)
	}
	points := 0
	for _, pts := range doc.Series {
		points += len(pts)
	}
	if points != len(resc.Run.Series) || len(doc.Histograms) != len(resc.Run.Histograms) {
		t.Errorf("imported %d points, %d histograms; rescued %d, %d", points, len(doc.Histograms), len(resc.Run.Series), len(resc.Run.Histograms))
	}
	csv := h.must(0, "results", "export", "1", "--format", "csv", "--results", good)
	var rcsv bytes.Buffer
	if err := store.ExportCSV(&rcsv, resc.Run); err != nil || csv.stdout != rcsv.String() {
		t.Errorf("imported series (csv) differ from the rescued ones (%v):\n%s\n---\n%s", err, csv.stdout, rcsv.String())
	}
	show := h.must(0, "results", "show", "1", "--results", good)
	end := strings.Index(show.stdout, "parameters:")
	if i := strings.Index(show.stdout, "storage under "); i >= 0 && i < end { // results show adds the storage block
		end = i
	}
	view := show.stdout[strings.Index(show.stdout, "\n")+1 : end]
	// The printed view names no run (0): it was not stored.
	printed := regexp.MustCompile(`(?m)^( +)0( +tpcb-like)`).ReplaceAllString(r.stdout, "${1}1$2")
	if !strings.Contains(view, "tps") || !strings.Contains(printed, view) {
		t.Errorf("results show of the imported run:\n%s\nis not what the run printed:\n%s", view, r.stdout)
	}

	// (c) a second import is refused, the store unchanged.
	again := h.must(2, "results", "import", rescue, "--results", good)
	if !strings.Contains(again.stderr, "already in "+good+" as run 1") ||
		!strings.Contains(again.stderr, "fix: nothing to import: the rescue file may be removed") {
		t.Errorf("second import:\n%s", again)
	}
	if runs := listRuns(t, good); len(runs) != 1 {
		t.Errorf("%d runs after a second import", len(runs))
	}

	// (d) a bad file: one error with the fix, nothing stored.
	b, _ := os.ReadFile(rescue)
	for name, content := range map[string][]byte{"cut.json": b[:len(b)/3], "notes.txt": []byte("not json\n")} {
		bad := filepath.Join(wd, name)
		os.WriteFile(bad, content, 0o600)
		res := h.must(2, "results", "import", bad, "--results", good)
		lines := strings.Split(strings.TrimSuffix(res.stderr, "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "error: cannot import "+bad+": it is not a tunebench rescue file") ||
			!strings.HasPrefix(lines[1], "  fix: give the rescue file a failed save named") {
			t.Errorf("bad file %s:\n%s", name, res)
		}
	}
	if runs := listRuns(t, good); len(runs) != 1 {
		t.Errorf("%d runs after bad imports", len(runs))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
