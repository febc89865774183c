package results

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/store"
)

// A save that fails leaves the record in a rescue file (its summary
// naming no run); Import stores it with the summary naming its new id,
// every other field as it was.
func TestSaveRescuesAndImport(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	sum := &Summary{Workload: "toy", Status: store.StatusErrors, StartedAt: start, EndedAt: start.Add(time.Minute),
		Measured: &Measured{TPS: 12.5, Errors: 3}, Extra: &extra{VUsers: 4, NOPM: 99.5}}
	rec := &Record{Summary: sum, Variant: "v", Params: json.RawMessage(`{"clients":4}`), Check: map[string]bool{"ok": false},
		Series:     []store.Point{{Series: "tps", T: 1, V: 12}, {Series: "tps", T: 2, V: 13}},
		Histograms: []store.Histogram{{Op: "ping", Class: "ok", Kind: store.KindLatency, Encoded: []byte{1, 2, 3}}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the save fails
	_, err = Save(ctx, st, rec)
	path, ok := store.RescuedTo(err)
	if !ok {
		t.Fatalf("not rescued: %v", err)
	}
	if sum.RunID != 0 || !strings.Contains(errs.HintOf(err), "results import") {
		t.Errorf("run id %d, hint %q", sum.RunID, errs.HintOf(err))
	}
	resc, err := store.ReadRescue(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(sum)
	if string(resc.Run.Summary) != string(want) {
		t.Errorf("rescued summary %s, want %s", resc.Run.Summary, want)
	}
	id, _, err := Import(context.Background(), st, resc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	sum.RunID = id
	want, _ = json.Marshal(sum)
	if string(got.Summary) != string(want) {
		t.Errorf("imported summary %s, want %s", got.Summary, want)
	}
	if string(got.Check) != `{"ok":false}` || len(got.Series) != 2 || len(got.Histograms) != 1 || got.Variant != "v" {
		t.Errorf("imported run %+v", got)
	}
}

func TestWithRunID(t *testing.T) {
	for in, want := range map[string]string{
		`{"schema_version":2,"run_id":0,"x":{"run_id":5},"note":"\u003c"}`: `{"schema_version":2,"run_id":42,"x":{"run_id":5},"note":"\u003c"}`,
		`{ "run_id" : 0 , "a": 1}`: `{ "run_id" : 42 , "a": 1}`,
		`{"a":[1,{"run_id":0}]}`:   `{"run_id":42,"a":[1,{"run_id":0}]}`,
		`{}`:                       `{"run_id":42}`,
	} {
		got, err := withRunID(json.RawMessage(in), 42)
		if err != nil || string(got) != want {
			t.Errorf("withRunID(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{`[]`, `null`, `{"a":`} {
		if _, err := withRunID(json.RawMessage(bad), 1); err == nil {
			t.Errorf("withRunID(%s): no error", bad)
		}
	}
}
