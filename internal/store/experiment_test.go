package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
)

func TestExperimentLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	e := &Experiment{Name: "sweep", Spec: "name: sweep\n", Plan: json.RawMessage(`{"runs":2}`), StartedAt: time.Unix(100, 0)}
	if _, err := s.CreateExperiment(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateExperiment(ctx, &Experiment{Name: "sweep", Spec: "x", Plan: json.RawMessage(`{}`)}); errs.KindOf(err) != errs.KindUsage {
		t.Fatalf("duplicate name: got %v, want a usage error", err)
	}
	if _, err := s.GetExperiment(ctx, "nope"); errs.KindOf(err) != errs.KindUsage {
		t.Fatalf("missing experiment: got %v", err)
	}
	// A run saved with a link writes the link in the same transaction.
	r := &Run{Workload: "tpcb", Status: StatusOK, Experiment: "sweep", StartedAt: time.Unix(101, 0), EndedAt: time.Unix(102, 0),
		Link: &PlanLink{ExperimentID: e.ID, PlanIndex: 1, Config: "shared_buffers=128MB", XName: "clients", XValue: 4, Repetition: 1}}
	id, err := s.SaveRun(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SavePlanLink(ctx, PlanLink{ExperimentID: e.ID, PlanIndex: 0, Config: "c", XName: "clients", XValue: 1, Warmup: true, Status: StatusFailed}); err != nil {
		t.Fatal(err)
	}
	links, err := s.PlanLinks(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 2 || links[0].RunID != 0 || !links[0].Warmup || links[1].RunID != id || links[1].Status != StatusOK || links[1].XValue != 4 {
		t.Fatalf("links: %+v", links)
	}
	if err := s.SetExperimentStatus(ctx, e.ID, ExpDone, time.Unix(200, 0)); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetExperiment(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != ExpDone || got.EndedAt.Unix() != 200 || string(got.Plan) != `{"runs":2}` || got.Spec != e.Spec {
		t.Fatalf("experiment: %+v", got)
	}
	list, err := s.ListExperiments(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "sweep" {
		t.Fatalf("list: %v %+v", err, list)
	}
}
