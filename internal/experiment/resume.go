package experiment

import (
	"fmt"

	"github.com/tunebench/tunebench/internal/store"
)

// Completed reports whether a stored run status means the run need not be
// done again: it ran to its end (with or without errors under the
// threshold). Interrupted and failed runs are done again.
func Completed(status string) bool {
	return status == store.StatusOK || status == store.StatusErrors
}

// Remaining decides which runs a resumed experiment still has to do, from the
// plan links in the store: a counted run is skipped when its link says it
// completed (ok or errors); interrupted, failed and never started runs are
// done (again). A block's warm-up runs are done again when any counted run
// of the block is still to do (the caches they warmed are gone), and skipped
// otherwise. A link whose run does not match the plan entry at its index is
// an error: the store belongs to another plan.
func (p *Plan) Remaining(links []store.PlanLink) (todo []bool, completed int, err error) {
	byIndex := make(map[int]store.PlanLink, len(links))
	for _, l := range links {
		if l.PlanIndex < 0 || l.PlanIndex >= len(p.Runs) {
			return nil, 0, fmt.Errorf("the store has a run for plan entry %d, but the plan has %d entries", l.PlanIndex+1, len(p.Runs))
		}
		r := p.Runs[l.PlanIndex]
		if l.Config != r.Label || l.Warmup != r.Warmup || l.Repetition != r.Repetition || l.XValue != r.X || (l.XName != p.XAxis && p.XAxis != "") {
			return nil, 0, fmt.Errorf("plan entry %d is %q in the store, but %q in the plan", l.PlanIndex+1,
				fmt.Sprintf("%s %s=%g rep %d warm-up %v", l.Config, l.XName, l.XValue, l.Repetition, l.Warmup), p.describeRun(l.PlanIndex))
		}
		byIndex[l.PlanIndex] = l
	}
	todo = make([]bool, len(p.Runs))
	blockTodo := map[int]bool{}
	for i, r := range p.Runs {
		if r.Warmup {
			continue
		}
		l, ok := byIndex[i]
		if ok && Completed(l.Status) {
			completed++
			continue
		}
		todo[i] = true
		blockTodo[r.Block] = true
	}
	for i, r := range p.Runs {
		if r.Warmup && blockTodo[r.Block] {
			todo[i] = true
		}
	}
	return todo, completed, nil
}

// Link is the store link of run i.
func (p *Plan) Link(experimentID int64, i int) store.PlanLink {
	r := p.Runs[i]
	return store.PlanLink{
		ExperimentID: experimentID, PlanIndex: i, Config: r.Label,
		XName: p.XAxis, XValue: r.X, Repetition: r.Repetition, Warmup: r.Warmup,
	}
}
