// Package workload is the contract every workload implements, and the
// registry through which everything else finds them. A workload is one
// package: it declares its options once (package option) and offers its
// capabilities as optional interfaces (Loader, Runner, Checker, Viewer);
// internal/workload/all is the one list of registered workloads. No
// workload name is switched on outside its own package.
package workload

import (
	"sort"

	"github.com/tunebench/tunebench/internal/step"
)

// The executor's step contract (package step), under the names workloads
// use.
type (
	OutcomeClass = step.OutcomeClass
	Outcome      = step.Outcome
	Worker       = step.Worker
	Multiplexed  = step.Multiplexed
	Thread       = step.Thread
	PinnedThread = step.PinnedThread
	Placed       = step.Placed
)

const (
	ClassOK                   = step.ClassOK
	ClassUserAbort            = step.ClassUserAbort
	ClassRetriedOK            = step.ClassRetriedOK
	ClassFailedRetryExhausted = step.ClassFailedRetryExhausted
	ClassFailedError          = step.ClassFailedError
	ClassConnError            = step.ClassConnError
	ClassAmbiguousCommit      = step.ClassAmbiguousCommit
	ClassSkippedLate          = step.ClassSkippedLate
	NumClasses                = step.NumClasses
)

// ParseClass is the inverse of OutcomeClass.String.
func ParseClass(s string) (OutcomeClass, bool) { return step.ParseClass(s) }

// Registry maps workload names to workloads. It is built in main and passed
// down; there is no package-level registry.
type Registry struct {
	byName map[string]Workload
}

// NewRegistry makes a registry holding ws.
func NewRegistry(ws ...Workload) *Registry {
	r := &Registry{byName: map[string]Workload{}}
	for _, w := range ws {
		r.Register(w)
	}
	return r
}

// Register adds w; registering a name twice panics (a programming error).
func (r *Registry) Register(w Workload) {
	n := w.Meta().Name
	if _, dup := r.byName[n]; dup {
		panic("workload registered twice: " + n)
	}
	r.byName[n] = w
}

// Get finds a workload by name.
func (r *Registry) Get(name string) (Workload, bool) {
	w, ok := r.byName[name]
	return w, ok
}

// Names lists the registered names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
