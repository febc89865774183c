package experiment

import (
	"sort"

	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
)

// MedianRow is one configuration and x value of an experiment's results:
// the median, lowest and highest metric of its counted runs.
type MedianRow struct {
	Label            string
	X                float64
	Runs, Planned    int
	Median, Min, Max float64
}

// Doubt is a stored run whose figures are in doubt (an outage, checks that
// could not run), with its reasons.
type Doubt struct {
	Link    store.PlanLink
	Reasons []results.Reason
}

// Medians aggregates the counted runs of plan p (warm-up runs and runs not
// completed are left out, and runs in doubt unless includeErrors) by
// configuration and x value, in plan order: metricOf and doubtsOf are by
// run id. It returns the rows and the runs in doubt.
func Medians(p *Plan, links []store.PlanLink, metricOf map[int64]float64, doubtsOf map[int64][]results.Reason, includeErrors bool) ([]MedianRow, []Doubt) {
	type key struct {
		label string
		x     float64
	}
	vals := map[key][]float64{}
	planned := map[key]int{}
	var keys []key
	for _, r := range p.Runs {
		if r.Warmup {
			continue
		}
		k := key{r.Label, r.X}
		if planned[k] == 0 {
			keys = append(keys, k)
		}
		planned[k]++
	}
	var doubtful []Doubt
	for _, l := range links {
		if l.Warmup || !Completed(l.Status) {
			continue
		}
		if ds := doubtsOf[l.RunID]; len(ds) > 0 {
			doubtful = append(doubtful, Doubt{l, ds})
			if !includeErrors {
				continue
			}
		}
		if v, ok := metricOf[l.RunID]; ok {
			k := key{l.Config, l.XValue}
			vals[k] = append(vals[k], v)
		}
	}
	configOrder := map[string]int{}
	for _, c := range p.Configs {
		configOrder[c.Label] = c.Index
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].label != keys[j].label {
			return configOrder[keys[i].label] < configOrder[keys[j].label]
		}
		return keys[i].x < keys[j].x
	})
	rows := make([]MedianRow, 0, len(keys))
	for _, k := range keys {
		v := vals[k]
		r := MedianRow{Label: k.label, X: k.x, Runs: len(v), Planned: planned[k]}
		if len(v) > 0 {
			sort.Float64s(v)
			r.Median, r.Min, r.Max = v[len(v)/2], v[0], v[len(v)-1]
			if len(v)%2 == 0 {
				r.Median = (v[len(v)/2-1] + v[len(v)/2]) / 2
			}
		}
		rows = append(rows, r)
	}
	return rows, doubtful
}
