package lifecycle

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// steps records what happened, in order.
type steps struct {
	mu  sync.Mutex
	got []string
}

func (s *steps) add(x string) {
	s.mu.Lock()
	s.got = append(s.got, x)
	s.mu.Unlock()
}

// measurer is a workload that measures itself (like fsblog) and says when.
type measurer struct{ s *steps }

func (m measurer) Meta() workload.Meta                                            { return workload.Meta{Name: "measurer", Version: "1"} }
func (m measurer) Options() option.Set                                            { return nil }
func (m measurer) RunHelp() workload.Help                                         { return workload.Help{} }
func (m measurer) Headline() workload.Headline                                    { return workload.Headline{Metric: "score"} }
func (m measurer) Describe() string                                               { return "" }
func (m measurer) Variant() string                                                { return "default" }
func (m measurer) Params() any                                                    { return map[string]any{} }
func (m measurer) NewRun(context.Context, *workload.RunEnv) (workload.Run, error) { return m, nil }
func (m measurer) Measure(context.Context) (*workload.Measured, error) {
	m.s.add("measure")
	now := time.Now()
	return &workload.Measured{Summary: &results.Summary{Workload: "measurer", Status: store.StatusOK, StartedAt: now, EndedAt: now}}, nil
}

// Enclose wraps the measured work only: an experiment's envelope holds
// tunebench itself while the workload measures, not while the run is
// saved.
func TestEncloseWrapsTheMeasuredWorkOnly(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &steps{}
	req := &Request{Workload: measurer{s}, Options: option.Values{}, Store: st, NoSamplers: true,
		Enclose: func() (func(), error) { s.add("enter"); return func() { s.add("leave") }, nil },
		Observe: func(e Event) {
			if e.Kind == EventSaved {
				s.add("saved")
			}
		}}
	if _, err := Run(ctx, req); err != nil {
		t.Fatal(err)
	}
	if want := []string{"enter", "measure", "leave", "saved"}; !slices.Equal(s.got, want) {
		t.Errorf("steps %v, want %v", s.got, want)
	}
}
