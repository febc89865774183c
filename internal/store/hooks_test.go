package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

func TestHooksAndRunReasons(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	e := &Experiment{Name: "h", Spec: "name: h\n", Plan: json.RawMessage(`{}`), StartedAt: time.Unix(100, 0)}
	if _, err := s.CreateExperiment(ctx, e); err != nil {
		t.Fatal(err)
	}
	r := sampleRun()
	r.Summary = json.RawMessage(`{"status":"ok","seed":9007199254740993,"tps":12.5}`)
	r.Link = &PlanLink{ExperimentID: e.ID, PlanIndex: 0, Config: "c", XName: "clients", XValue: 1, Repetition: 1}
	id, err := s.SaveRun(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []HookRecord{
		{ExperimentID: e.ID, Point: "before_experiment", PlanIndex: -1, Command: "true", ExitCode: 0, StartedAt: time.Unix(101, 0)},
		{ExperimentID: e.ID, Point: "after_run", PlanIndex: 0, RunID: id, Config: "c", Command: "false", ExitCode: 1, Output: "no\n", ElapsedS: 0.5},
		{ExperimentID: e.ID, Point: "before_run", PlanIndex: 1, Command: "sleep 9", ExitCode: -1, TimedOut: true, Error: "timed out"},
	} {
		if err := s.SaveHook(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	hs, err := s.Hooks(ctx, e.ID)
	if err != nil || len(hs) != 3 {
		t.Fatalf("%+v %v", hs, err)
	}
	if !hs[0].OK() || hs[0].PlanIndex != -1 || hs[0].RunID != 0 || hs[0].StartedAt.Unix() != 101 {
		t.Errorf("first %+v", hs[0])
	}
	if hs[1].OK() || hs[1].RunID != id || hs[1].ExitCode != 1 || hs[1].Output != "no\n" || hs[1].ElapsedS != 0.5 {
		t.Errorf("second %+v", hs[1])
	}
	if hs[2].OK() || !hs[2].TimedOut || hs[2].ExitCode != -1 || hs[2].PlanIndex != 1 {
		t.Errorf("third %+v", hs[2])
	}

	if err := s.AddRunReason(ctx, id, "after_run_hook", "hook after_run failed"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Status  string           `json:"status"`
		Seed    json.Number      `json:"seed"`
		Reasons []map[string]any `json:"status_reasons"`
	}
	if err := json.Unmarshal(got.Summary, &sum); err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusErrors || sum.Status != StatusErrors || sum.Seed != "9007199254740993" || len(sum.Reasons) != 1 || sum.Reasons[0]["code"] != "after_run_hook" {
		t.Errorf("run after the reason: status %s, summary %s", got.Status, got.Summary)
	}
	links, _ := s.PlanLinks(ctx, e.ID)
	if len(links) != 1 || links[0].Status != StatusErrors {
		t.Errorf("links %+v", links)
	}
}
