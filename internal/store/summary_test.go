package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSaveRunWithSummaryNamesItsID(t *testing.T) {
	st := openTemp(t)
	ctx := context.Background()
	r := sampleRun()
	id, err := st.SaveRunWithSummary(ctx, r, func(id int64) (json.RawMessage, error) {
		return json.RawMessage(`{"run_id":` + itoa(id) + `}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Summary) != `{"run_id":`+itoa(id)+`}` {
		t.Fatalf("summary %s", got.Summary)
	}

	// A failing summary leaves no run behind.
	before, _ := st.ListRuns(ctx, ListFilter{})
	if _, err := st.SaveRunWithSummary(ctx, sampleRun(), func(int64) (json.RawMessage, error) {
		return nil, errors.New("boom")
	}); err == nil {
		t.Fatal("expected error")
	}
	// A password-shaped summary is refused, also without leaving a run.
	if _, err := st.SaveRunWithSummary(ctx, sampleRun(), func(int64) (json.RawMessage, error) {
		return json.RawMessage(`{"dsn":"host=x password=hunter2hunter2"}`), nil
	}); err == nil || strings.Contains(err.Error(), "hunter2hunter2") {
		t.Fatalf("password summary: %v", err)
	}
	after, _ := st.ListRuns(ctx, ListFilter{})
	if len(after) != len(before) {
		t.Fatalf("runs %d -> %d after failed saves", len(before), len(after))
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
