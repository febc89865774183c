package results

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/tunebench/tunebench/internal/store"
)

// The rule of a run's figures in doubt, written once: a run with status
// errors whose reasons include one of DoubtCodes (an outage over its
// max_outage_pct, checks that could not run). Runs with status errors for
// other reasons (errors within max_errors_pct, or over it) count; runs
// stored before the reasons were recorded have none and are not in doubt.
// Summary.InDoubt answers it for a decoded summary; StoredDoubts for a
// stored run's status and raw summary JSON, as the report and `experiment
// show` read them.

// Doubts are the reasons among rs whose code is one of DoubtCodes.
func Doubts(rs []Reason) []Reason {
	var out []Reason
	for _, r := range rs {
		if slices.Contains(DoubtCodes, r.Code) {
			out = append(out, r)
		}
	}
	return out
}

// InDoubt reports whether a run with this status and these reasons has its
// figures in doubt: status errors and a reason in DoubtCodes.
func InDoubt(status string, rs []Reason) bool {
	return status == store.StatusErrors && len(Doubts(rs)) > 0
}

// StoredDoubts returns the reasons that put a stored run's figures in
// doubt, from its status (the store's) and its summary as raw JSON; nil
// when the run is not in doubt (another status, no such reason, a summary
// without reasons or that cannot be read).
func StoredDoubts(status string, summary json.RawMessage) []Reason {
	if status != store.StatusErrors || len(summary) == 0 {
		return nil
	}
	var raw map[string]any
	if json.Unmarshal(summary, &raw) != nil {
		return nil
	}
	return Doubts(ReasonsOf(raw))
}

// ReasonsOf reads the status_reasons of a summary as generic JSON,
// leniently: each reason is an object with a code and a detail (a detail
// under "message" or "text" is taken too), or a plain string (a detail
// without a code); a summary stored before the reasons were recorded has
// none.
func ReasonsOf(raw map[string]any) []Reason {
	var out []Reason
	var add func(v any)
	add = func(v any) {
		switch x := v.(type) {
		case string:
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, Reason{Detail: x})
			}
		case []any:
			for _, e := range x {
				add(e)
			}
		case map[string]any:
			r := Reason{}
			r.Code, _ = x["code"].(string)
			for _, k := range []string{"detail", "message", "text"} {
				if d, ok := x[k].(string); ok && r.Detail == "" {
					r.Detail = strings.TrimSpace(d)
				}
			}
			if r.Code != "" || r.Detail != "" {
				out = append(out, r)
			}
		}
	}
	add(raw["status_reasons"])
	return out
}

// OutageSeconds is the time the outages cover in the measured window
// [0, windowS]: the union of their spans (overlapping windows count once),
// clipped to the window. A window of 0 or less is unknown: the union is
// then not clipped.
func OutageSeconds(outages []Outage, windowS float64) float64 {
	spans := make([][2]float64, 0, len(outages))
	for _, o := range outages {
		s, e := o.StartS, o.EndS
		if windowS > 0 {
			s, e = max(s, 0), min(e, windowS)
		}
		if e > s {
			spans = append(spans, [2]float64{s, e})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	total, end := 0.0, math.Inf(-1) // end: the furthest end counted so far
	for _, sp := range spans {
		if s := max(sp[0], end); sp[1] > s {
			total += sp[1] - s
			end = sp[1]
		}
	}
	return total
}
