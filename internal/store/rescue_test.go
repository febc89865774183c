package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
)

// awkwardRun is sampleRun with the awkward values a rescue file must keep:
// ±Inf and NaN, an empty histogram, text that JSON escapes for HTML, a
// plan link.
func awkwardRun() *Run {
	r := sampleRun()
	r.Series = append(r.Series,
		Point{Series: "inf", T: 0, V: math.Inf(1)},
		Point{Series: "inf", T: 0.5, V: math.Inf(-1)},
		Point{Series: "inf", T: 0.25, V: math.SmallestNonzeroFloat64},
		Point{Series: "inf", T: 1e-9, V: math.MaxFloat64},
	)
	r.Summary = json.RawMessage(`{"run_id":0,"tps":1234.5678901234567,"note":"\u003cok\u003e & done"}`)
	r.Check = json.RawMessage(`{"ok":true}`)
	r.SummarySchema = 2
	return r
}

// failedSave is a save that fails: its context is cancelled.
func failedSave(t *testing.T, s *Store, r *Run) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.SaveRun(ctx, r)
	if err == nil {
		t.Fatal("a save with a cancelled context succeeded")
	}
	return err
}

// sameRun compares two runs as stored (ids, plan links and series order
// aside: GetRun returns series by name).
func sameRun(t *testing.T, got, want *Run) {
	t.Helper()
	if got.Experiment != want.Experiment || got.Workload != want.Workload || got.Variant != want.Variant ||
		got.Status != want.Status || got.SummarySchema != want.SummarySchema {
		t.Errorf("row %+v, want %+v", got.Info(), want.Info())
	}
	if !got.StartedAt.Equal(want.StartedAt) || !got.EndedAt.Equal(want.EndedAt) {
		t.Errorf("times %v %v, want %v %v", got.StartedAt, got.EndedAt, want.StartedAt, want.EndedAt)
	}
	for _, c := range []struct {
		name      string
		got, want json.RawMessage
	}{{"params", got.Params, want.Params}, {"env", got.Env, want.Env}, {"check", got.Check, want.Check}} {
		if !jsonEqual(c.got, c.want) {
			t.Errorf("%s: %s, want %s", c.name, c.got, c.want)
		}
	}
	if w := canonicalSeries(want.Series); !equalPoints(canonicalSeries(got.Series), w) {
		t.Errorf("series:\n got %v\nwant %v", got.Series, w)
	}
	if !reflect.DeepEqual(sortedHistograms(got.Histograms), sortedHistograms(want.Histograms)) {
		t.Errorf("histograms:\n got %v\nwant %v", got.Histograms, want.Histograms)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	ca, err1 := canonicalJSON(a)
	cb, err2 := canonicalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// A save that fails writes the run to a rescue file beside the store; the
// file brings the run back exactly, once, through the save's own code.
func TestRescueBesideStoreAndImport(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	r := awkwardRun()
	cause := failedSave(t, s, r)

	err := s.Rescue(r, cause, t.TempDir())
	path, ok := RescuedTo(err)
	if !ok {
		t.Fatalf("no rescue: %v", err)
	}
	if filepath.Dir(path) != filepath.Dir(s.Path()) || !strings.HasPrefix(filepath.Base(path), "results.db.rescue-20250314T140926Z-tpcb") ||
		!strings.HasSuffix(path, ".json") {
		t.Errorf("rescue file %s, want it beside %s, named for the run", path, s.Path())
	}
	if !errors.Is(err, context.Canceled) || errs.KindOf(err) != errs.KindInternal {
		t.Errorf("the error lost its cause or kind: %v (%v)", err, errs.KindOf(err))
	}
	if h := errs.HintOf(err); !strings.Contains(h, "tunebench results import "+path+" --results "+s.Path()) {
		t.Errorf("hint %q", h)
	}
	if !strings.Contains(err.Error(), "written to "+path) {
		t.Errorf("error %q does not name the file", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("rescue file: %v, mode %v", err, fi.Mode())
	}
	if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}

	resc, err := ReadRescue(path)
	if err != nil {
		t.Fatal(err)
	}
	if resc.Store != s.Path() || !strings.Contains(resc.Error, "canceled") {
		t.Errorf("rescue names store %q, error %q", resc.Store, resc.Error)
	}
	if !bytes.Equal(resc.Run.Summary, r.Summary) {
		t.Errorf("summary %s, want %s byte for byte", resc.Run.Summary, r.Summary)
	}
	sameRun(t, resc.Run, r)

	id, notes, err := s.ImportRun(ctx, resc.Run, nil)
	if err != nil || len(notes) > 0 {
		t.Fatalf("import: %v, notes %v", err, notes)
	}
	got, err := s.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, got, r)
	// The same run saved directly exports the same, but for its id.
	direct := awkwardRun()
	direct.StartedAt = direct.StartedAt.Add(time.Second)
	direct.EndedAt = direct.EndedAt.Add(time.Second)
	did, err := s.SaveRun(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	dr, _ := s.GetRun(ctx, did)
	dr.ID, dr.StartedAt, dr.EndedAt = got.ID, got.StartedAt, got.EndedAt
	var a, b bytes.Buffer
	if err := ExportJSON(&a, got); err != nil {
		t.Fatal(err)
	}
	if err := ExportJSON(&b, dr); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("imported run exports\n%s\nwant\n%s", a.String(), b.String())
	}

	// Twice: refused, nothing added.
	again, _ := ReadRescue(path)
	before := countRows(t, s)
	_, _, err = s.ImportRun(ctx, again.Run, nil)
	if err == nil || errs.KindOf(err) != errs.KindUsage || !strings.Contains(err.Error(), "already in") ||
		!strings.Contains(err.Error(), "as run "+itoa(id)) || !strings.Contains(errs.HintOf(err), "may be removed") {
		t.Errorf("second import: %v (hint %q)", err, errs.HintOf(err))
	}
	if after := countRows(t, s); !reflect.DeepEqual(after, before) {
		t.Errorf("refused import changed the store: %v -> %v", before, after)
	}
}

// When the store's directory cannot take the file (here it is gone), the
// rescue goes to the first fallback directory that can; an existing file
// of the same name is kept.
func TestRescueFallbackDirs(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), filepath.Join(dir, "gone", "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := awkwardRun()
	cause := failedSave(t, s, r)
	if err := os.RemoveAll(filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o600)
	good := t.TempDir()
	first, ok := RescuedTo(s.Rescue(r, cause, notDir, good))
	if !ok || filepath.Dir(first) != good {
		t.Fatalf("rescued to %q (%v), want in %s", first, ok, good)
	}
	second, ok := RescuedTo(s.Rescue(r, cause, good))
	if !ok || second == first || !strings.HasSuffix(second, "-2.json") {
		t.Fatalf("second rescue of the same run: %q, first %q", second, first)
	}
	if _, err := ReadRescue(first); err != nil {
		t.Errorf("the first file was overwritten: %v", err)
	}

	// Nowhere to write: the error says the result is lost, and why.
	err = s.Rescue(r, cause, notDir)
	if _, ok := RescuedTo(err); ok || !strings.Contains(err.Error(), "no rescue file could be written") || !errors.Is(err, context.Canceled) {
		t.Errorf("no place for a rescue file: %v", err)
	}
}

// A large result is written gzip-compressed and read back the same.
func TestRescueGzip(t *testing.T) {
	s := openTemp(t)
	r := awkwardRun()
	for sec := 0; sec < 3600; sec++ {
		for k := 0; k < 30; k++ {
			r.Series = append(r.Series, Point{Series: "s" + itoa(int64(k)), T: float64(sec), V: float64(sec*k) / 7})
		}
	}
	path, ok := RescuedTo(s.Rescue(r, failedSave(t, s, r)))
	if !ok || !strings.HasSuffix(path, ".json.gz") {
		t.Fatalf("large rescue: %q %v", path, ok)
	}
	resc, err := ReadRescue(path)
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, resc.Run, r)
}

// A run the store would refuse whatever its state (a password) is not
// written anywhere.
func TestRescueRefusesSecrets(t *testing.T) {
	s := openTemp(t)
	r := awkwardRun()
	cause := errors.New("disk full")
	r.Params = json.RawMessage(`{"dsn":"host=x password=hunter2hunter2"}`)
	if err := s.Rescue(r, cause); err != cause {
		t.Fatalf("a run with a password was rescued: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(s.Path()), "*rescue*")); len(m) > 0 {
		t.Fatalf("files written: %v", m)
	}
}

// A file that is not a rescue file, or not a whole one, is refused with
// one message that says what it is and a hint.
func TestReadRescueBadFiles(t *testing.T) {
	s := openTemp(t)
	r := awkwardRun()
	good, _ := RescuedTo(s.Rescue(r, failedSave(t, s, r)))
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	ExportJSON(&export, exportRun())
	dir := t.TempDir()
	cases := []struct {
		name, content, want string
	}{
		{"text", "hello", "not a tunebench rescue file"},
		{"truncated", string(whole[:len(whole)/2]), "not a tunebench rescue file"},
		{"no format", `{"run":{}}`, `no "format" field`},
		{"export", export.String(), "`tunebench results export` file"},
		{"newer", strings.Replace(string(whole), RescueFormat, "tunebench.rescue.v9", 1), "newer tunebench"},
		{"other", `{"format":"x"}`, `format "x"`},
		{"bad status", strings.Replace(string(whole), `"status":"ok"`, `"status":"fine"`, 1), `status "fine"`},
		{"series", strings.Replace(string(whole), `"t":[0,`, `"t":[`, 1), "times and"},
		{"missing", "", "cannot read rescue file"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".json")
		if c.name != "missing" {
			os.WriteFile(path, []byte(c.content), 0o600)
		}
		_, err := ReadRescue(path)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if errs.KindOf(err) != errs.KindUsage || errs.HintOf(err) == "" || !strings.Contains(err.Error(), c.want) ||
			!strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (kind %v, hint %q), want %q", c.name, err, errs.KindOf(err), errs.HintOf(err), c.want)
		}
	}
}

// The plan link comes back when the store has the experiment (by name)
// and its plan entry has no run yet; otherwise the run comes in without it.
func TestImportRunPlanLink(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	exp := &Experiment{Name: "sb-sweep", Spec: "x", Plan: json.RawMessage(`{}`), StartedAt: time.Now()}
	if _, err := s.CreateExperiment(ctx, exp); err != nil {
		t.Fatal(err)
	}
	link := func(i int) *PlanLink {
		return &PlanLink{ExperimentID: 99, PlanIndex: i, Config: "c", XName: "clients", XValue: 4, Repetition: 1}
	}
	// A failed attempt recorded (no run): the import takes the entry.
	if err := s.SavePlanLink(ctx, PlanLink{ExperimentID: exp.ID, PlanIndex: 0, Config: "c", XName: "clients", XValue: 4, Repetition: 1, Status: StatusFailed}); err != nil {
		t.Fatal(err)
	}
	r := awkwardRun()
	r.Link = link(0)
	resc := roundTrip(t, s, r)
	id, notes, err := s.ImportRun(ctx, resc.Run, nil)
	if err != nil || len(notes) > 0 {
		t.Fatalf("import: %v %v", err, notes)
	}
	links, _ := s.PlanLinks(ctx, exp.ID)
	if len(links) != 1 || links[0].RunID != id || links[0].Status != StatusOK || links[0].XValue != 4 {
		t.Errorf("links %+v, want run %d on entry 0", links, id)
	}

	// Entry 0 now has a run: another run for it comes in without the link.
	r2 := awkwardRun()
	r2.StartedAt = r2.StartedAt.Add(time.Minute)
	r2.Link = link(0)
	_, notes, err = s.ImportRun(ctx, roundTrip(t, s, r2).Run, nil)
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "already has run") {
		t.Errorf("taken entry: %v %v", err, notes)
	}
	// An experiment the store does not have.
	r3 := awkwardRun()
	r3.StartedAt = r3.StartedAt.Add(2 * time.Minute)
	r3.Experiment = "elsewhere"
	r3.Link = link(1)
	id3, notes, err := s.ImportRun(ctx, roundTrip(t, s, r3).Run, nil)
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], `experiment "elsewhere" is not in`) {
		t.Errorf("unknown experiment: %v %v", err, notes)
	}
	if got, _ := s.GetRun(ctx, id3); got == nil || got.Experiment != "elsewhere" {
		t.Errorf("the run lost its experiment name: %+v", got)
	}
}

// roundTrip rescues r after a failed save and reads the file back.
func roundTrip(t *testing.T, s *Store, r *Run) *Rescued {
	t.Helper()
	path, ok := RescuedTo(s.Rescue(r, failedSave(t, s, r), t.TempDir()))
	if !ok {
		t.Fatal("not rescued")
	}
	resc, err := ReadRescue(path)
	if err != nil {
		t.Fatal(err)
	}
	return resc
}
