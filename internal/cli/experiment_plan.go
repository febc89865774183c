package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/experiment"
	"github.com/tunebench/tunebench/internal/target"
)

// printPlan is the dry run: the schedule as a table and the estimate.
func printPlan(s *State, p *experiment.Plan, todo func(int) bool, seedChosen bool, note string) {
	spec := p.Spec()
	nx := len(p.XValues)
	counted := p.Counted()
	s.printf("experiment %s: workload %s, %d configuration(s) x %d %s value(s) x %d repetition(s) = %d runs",
		p.Name, p.Workload, len(p.Configs), nx, orDash(p.XAxis), p.Repetitions, counted)
	if w := len(p.Runs) - counted; w > 0 {
		s.printf(" + %d warm-up runs", w)
	}
	if p.Shards > 1 {
		s.printf(", each split over %d shards and merged", p.Shards)
	}
	s.printf("\n")
	if p.Description != "" {
		s.printf("  %s\n", p.Description)
	}
	db := ", database " + p.Database
	if w := p.WorkloadSpec(); w != nil && w.NoDatabase {
		db = " (" + p.Workload + " uses no database)"
	}
	switch lines := p.DescribeTargets(); {
	case len(lines) > 0:
		s.printf("targets (%s):\n  %s\n", strings.Trim(db, ", ()"), strings.Join(lines, "\n  "))
	case spec.Target.DSN != "":
		s.printf("target: %s%s\n", spec.Target.DSN, db)
	case spec.Target.Managed.Dir != "":
		s.printf("target: managed server in %s%s\n", spec.Target.Managed.Dir, db)
	case len(p.Configs) > 0 && p.Configs[0].DataDir != "":
		s.printf("target: a managed server per data_dir value%s\n", db)
	default:
		s.printf("target: a managed server in a temporary directory%s\n", db)
	}
	if c := spec.Target.RestartCommand; c != "" {
		limit := spec.Target.RestartTimeout
		if limit == 0 {
			limit = target.DefaultRestartTimeout
		}
		s.printf("restart command: %s (at most %s; run for each restart, including those that restore the settings)\n", c, limit)
	}
	if len(p.BaseSettings) > 0 {
		s.printf("base settings: %s\n", experiment.SettingsText(p.BaseSettings))
	}
	if len(p.BaseKernel) > 0 {
		s.printf("kernel settings of every run: %s (root; restored at the end)\n", experiment.SettingsText(p.BaseKernel))
	}
	for _, h := range p.Hooks {
		s.printf("hook %s: %s (timeout %s)\n", h.Point, h.Command, h.TimeoutD())
	}
	order := p.Order
	if p.Order != experiment.OrderSequential {
		order += fmt.Sprintf(" (seed %d)", p.Seed)
	}
	reset := "none (runs share the data)"
	if w := p.WorkloadSpec(); w != nil && w.NoDatabase {
		reset = "none (no data in a database)"
	}
	if p.Reset == experiment.ResetTemplate {
		reset = "template copy before every run"
		if p.ResetEvery == experiment.ResetEveryConfiguration {
			reset = "template copy before each configuration's first run"
		}
	}
	s.printf("order: %s; reset: %s; cool-down: %s\n", order, reset, time.Duration(p.CooldownS*float64(time.Second)))
	s.printf("baseline: %s\n", p.Baseline)
	if note != "" {
		s.printf("%s\n", note)
	}
	s.printf("\n")

	// Runs as a table; the other steps as notes between them.
	steps := p.Schedule(todo)
	type line struct {
		note  string
		cells [5]string
	}
	var lines []line
	for _, st := range steps {
		switch st.Kind {
		case experiment.StepRun:
			r := p.Runs[st.Run]
			kind := fmt.Sprintf("rep %d", r.Repetition)
			if r.Warmup {
				kind = fmt.Sprintf("warm-up %d", r.Repetition)
			}
			est := st.Estimate.Round(time.Second).String()
			if st.Unknown {
				est = ">" + est
			}
			lines = append(lines, line{cells: [5]string{strconv.Itoa(st.Run + 1), r.Label, p.FormatX(r.X), kind, est}})
		case experiment.StepReset, experiment.StepCooldown:
		case experiment.StepHook:
			if !st.PerRun { // the hooks around each run are listed above
				lines = append(lines, line{note: "-- " + p.DescribeStep(st)})
			}
		default:
			lines = append(lines, line{note: fmt.Sprintf("-- %s (%s)", p.DescribeStep(st), st.Estimate.Round(time.Second))})
		}
	}
	head := [5]string{"#", "CONFIGURATION", strings.ToUpper(orDash(p.XAxis)), "RUN", "EST"}
	var w [5]int
	for _, l := range append([]line{{cells: head}}, lines...) {
		for i, c := range l.cells {
			w[i] = max(w[i], len(c))
		}
	}
	row := func(c [5]string) {
		s.printf("%*s  %-*s  %*s  %-*s  %*s\n", w[0], c[0], w[1], c[1], w[2], c[2], w[3], c[3], w[4], c[4])
	}
	row(head)
	for _, l := range lines {
		if l.note != "" {
			s.printf("%*s  %s\n", w[0], "", l.note)
			continue
		}
		row(l.cells)
	}
	e := p.EstimateFor(todo)
	bound := ""
	if e.LowerBound {
		bound = "at least "
	}
	s.printf("\nestimate: %s%s = runs %s (%d) + warm-up runs %s (%d) + cool-downs %s (%d) + resets %s (%d) + loads %s (%d) + settings %s (%d restarts, %d reloads) + servers %s\n",
		bound, e.Total(), secs(e.RunsS), e.Runs, secs(e.WarmupRunsS), e.WarmupRuns, secs(e.CooldownS), e.Cooldowns,
		secs(e.ResetsS), e.Resets, secs(e.LoadsS), e.Loads, secs(e.SettingsS), e.Restarts, e.Reloads, secs(e.ServersS))
	if seedChosen && p.Order != experiment.OrderSequential {
		s.printf("the file has no seed: a run picks a new one (add `seed: %d` to run this order)\n", p.Seed)
	}
}

func secs(v float64) string {
	return time.Duration(v * float64(time.Second)).Round(time.Second).String()
}
