package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// What identifies a plan's runs: its fingerprint, and how a resumed
// plan is told to be the same as the stored one (or how it differs).

// fingerprint hashes what identifies the runs: a resumed experiment must
// have the same one (descriptions, cool-down and estimates may change).
func (p *Plan) fingerprint() string {
	type runID struct {
		C, Rep int
		X      float64
		W      bool
		B      int
		S      int64
	}
	id := struct {
		W, X, Reset, Every, DB string
		Base                   []Setting
		Configs                []Config
		Runs                   []runID
		Kernel                 []Setting    `json:",omitempty"`
		Targets                []PlanTarget `json:",omitempty"`
	}{p.Workload, p.XAxis, p.Reset, p.ResetEvery, p.Database, p.BaseSettings, p.Configs, nil, p.BaseKernel, p.Targets}
	for _, r := range p.Runs {
		id.Runs = append(id.Runs, runID{r.Config, r.Repetition, r.X, r.Warmup, r.Block, r.Seed})
	}
	b, _ := json.Marshal(id)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// SameRunsAs reports whether p, planned now, identifies the same runs as
// stored, planned when the experiment started (a resume). It does when the
// fingerprints are equal, and also when they are equal once p leaves out
// its run options that stored's workload did not have (options added by a
// newer tunebench) where p has them at their defaults: the resumed runs go
// on with the new options' defaults, as with any other change to the
// driver. Options that shape the loaded data are never left out (they mark
// the database). Plans made before OptionNames was stored tell the options
// they had by their configurations, which hold every option with a default.
func (p *Plan) SameRunsAs(stored *Plan) bool {
	if stored.Fingerprint == p.Fingerprint {
		return true
	}
	if p.noDatabase() && (stored.Reset != p.Reset || stored.ResetEvery != p.ResetEvery) {
		// A plan made before workloads without a database had no reset:
		// the template reset it had changes no run.
		q := *p
		q.Reset, q.ResetEvery = stored.Reset, stored.ResetEvery
		if q.fingerprint() == stored.Fingerprint {
			return true
		}
		p = &q
	}
	if p.workload == nil || len(stored.Configs) != len(p.Configs) {
		return false
	}
	had := map[string]bool{}
	for _, n := range stored.OptionNames {
		had[n] = true
	}
	if len(stored.OptionNames) == 0 {
		for _, c := range stored.Configs {
			for k := range c.Options {
				had[k] = true
			}
			for k := range c.Load {
				had[k] = true
			}
		}
	}
	q := *p
	q.Configs = make([]Config, len(p.Configs))
	dropped := false
	for i, c := range p.Configs {
		opts := Options{}
		for k, v := range c.Options {
			if opt, ok := p.workload.Option(k); ok && !had[k] && !opt.Load && opt.Default != "" && v == opt.Default {
				dropped = true
				continue
			}
			opts[k] = v
		}
		c.Options = opts
		q.Configs[i] = c
	}
	return dropped && q.fingerprint() == stored.Fingerprint
}

// Differences describes how plan q differs from p in what identifies the
// runs (for a resume refused because the file changed); empty when none.
func (p *Plan) Differences(q *Plan) []string {
	var out []string
	if p.Workload != q.Workload {
		out = append(out, fmt.Sprintf("workload %s, now %s", p.Workload, q.Workload))
	}
	// A workload that uses no database has no reset: plans made before
	// that was known had the template reset, which changes no run.
	if (p.Reset != q.Reset || p.ResetEvery != q.ResetEvery) && !p.noDatabase() && !q.noDatabase() {
		out = append(out, fmt.Sprintf("reset %s/%s, now %s/%s", p.Reset, p.ResetEvery, q.Reset, q.ResetEvery))
	}
	if p.Database != q.Database {
		out = append(out, fmt.Sprintf("database %s, now %s", p.Database, q.Database))
	}
	if len(p.Configs) != len(q.Configs) {
		out = append(out, fmt.Sprintf("%d configurations, now %d", len(p.Configs), len(q.Configs)))
	} else {
		for i := range p.Configs {
			a, b := p.Configs[i], q.Configs[i]
			if a.Label != b.Label || a.Load.Text(sortedKeys(a.Load)) != b.Load.Text(sortedKeys(b.Load)) ||
				a.Options.Text(sortedKeys(a.Options)) != b.Options.Text(sortedKeys(b.Options)) {
				out = append(out, fmt.Sprintf("configuration %d: %s %s %s, now %s %s %s", i+1,
					a.Label, a.Load.Text(sortedKeys(a.Load)), a.Options.Text(sortedKeys(a.Options)),
					b.Label, b.Load.Text(sortedKeys(b.Load)), b.Options.Text(sortedKeys(b.Options))))
			}
		}
	}
	if len(p.Runs) != len(q.Runs) {
		out = append(out, fmt.Sprintf("%d runs, now %d", len(p.Runs), len(q.Runs)))
	} else if len(out) == 0 {
		for i := range p.Runs {
			a, b := p.Runs[i], q.Runs[i]
			if a.Config != b.Config || a.X != b.X || a.Repetition != b.Repetition || a.Warmup != b.Warmup || a.Seed != b.Seed {
				out = append(out, fmt.Sprintf("run %d: %s, now %s (the seed or the order changed?)", i+1, p.describeRun(i), q.describeRun(i)))
				break
			}
		}
	}
	if len(out) == 0 && p.Fingerprint != q.Fingerprint {
		out = append(out, "the base settings or the blocks differ")
	}
	return out
}

func sortedKeys(o Options) []string {
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
