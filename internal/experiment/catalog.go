// Package experiment turns an experiment file (YAML) into a plan of runs and
// executes it: spec parsing with strict, line-numbered errors, matrix
// expansion, seeded ordering, time estimates, resume planning, and an
// orchestrator whose side effects (servers, loads, resets, runs, the store)
// are reached through interfaces. It never prints: progress goes to an
// Observer the CLI supplies.
//
// The workloads an experiment can use are described by a Catalog the caller
// passes in (the CLI's adapter registry): each Workload lists its options
// with their kinds, defaults and bounds, which of them shape the loaded data,
// and which one is the x axis of the classic throughput-vs-clients figure.
package experiment

import (
	"sort"
	"time"

	"github.com/tunebench/tunebench/internal/option"
)

// The option declarations are the workloads' own (package option); the
// names below keep this package's code short.
type (
	Kind    = option.Kind
	Option  = option.Option
	Options = option.Values
)

const (
	KindInt      = option.KindInt
	KindFloat    = option.KindFloat
	KindDuration = option.KindDuration
	KindBool     = option.KindBool
	KindString   = option.KindString
	KindList     = option.KindList
)

// Workload describes what an experiment needs to know about a workload.
type Workload struct {
	Name        string
	Description string
	// XAxis is the option the runs are plotted against by default
	// (clients for tpcb, vusers for tpcc). It must be a numeric run option.
	XAxis   string
	Options []Option
	// Metric names the summary field that measures throughput (tps, nopm).
	Metric string
	// Runnable is false for workloads whose runs cannot execute in this
	// build yet: their files parse and dry-run, and Execute refuses them.
	Runnable bool
	// NoDatabase: the workload uses no database (storage, fsblog): the
	// experiment makes no benchmark database, template, load or reset.
	NoDatabase bool
	// Dialects are the databases the workload runs on in this build
	// (workload.Meta.Dialects; empty: it uses none).
	Dialects []string
	// RunTime estimates one run (its in-run warm-up or ramp-up included)
	// from the run's options; known is false when it cannot be told in
	// advance (a count of transactions instead of a duration).
	RunTime func(o Options) (d time.Duration, known bool)
	// LoadTime estimates loading the data for the given load options.
	LoadTime func(o Options) time.Duration
	// DataBytes estimates the size of the loaded database (for reset estimates).
	DataBytes func(o Options) int64
	// Check validates a full set of run and load options together (rules
	// across options); nil means none.
	Check func(o Options) error
}

// Option returns the named option.
func (w *Workload) Option(name string) (*Option, bool) {
	for i := range w.Options {
		if w.Options[i].Name == name {
			return &w.Options[i], true
		}
	}
	return nil, false
}

// OptionNames lists the option names in declaration order.
func (w *Workload) OptionNames() []string {
	out := make([]string, len(w.Options))
	for i, o := range w.Options {
		out[i] = o.Name
	}
	return out
}

// Catalog holds the workloads experiments can use, by name.
type Catalog map[string]*Workload

// Names lists the workload names, sorted.
func (c Catalog) Names() []string {
	out := make([]string, 0, len(c))
	for n := range c {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func parseInt(s string) (int64, error) { return option.ParseInt(s) }

func parseFloat(s string) (float64, error) { return option.ParseFloat(s) }

func parseDuration(s string) (time.Duration, error) { return option.ParseDuration(s) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
