package report

import (
	"slices"
	"strings"

	"github.com/tunebench/tunebench/internal/envinfo"
)

// enginesView says, once, what means something different on each of the
// database engines the runs compare: the notes their targets recorded
// with each run (target.Noter), side by side.
type enginesView struct {
	Columns []string // "PostgreSQL: pg-default, pg-tuned"
	Rows    []engineRow
}

type engineRow struct {
	Topic string
	Texts []string // one per column ("" when the engine gave none)
}

// noteTopics are the headings of the note topics the report knows; an
// unknown topic is shown as it is named.
var noteTopics = map[string]string{
	envinfo.NoteIsolation:    "Default isolation level",
	envinfo.NoteTransactions: "The database's count of transactions (a workload's cross-check, TPM)",
}

// engines is the engines section, nil when the runs are on one engine.
func engines(d *dataset) *enginesView {
	type engine struct {
		product string
		targets []string
		notes   []envinfo.Note
	}
	var list []*engine
	for _, rd := range d.Runs {
		if rd.Env == nil || rd.Kind != kindDB {
			continue
		}
		p := productOf(rd)
		i := slices.IndexFunc(list, func(e *engine) bool { return e.product == p })
		if i < 0 {
			list = append(list, &engine{product: p})
			i = len(list) - 1
		}
		e := list[i]
		if t := rd.Env.Target; t != nil && !slices.Contains(e.targets, t.Name) {
			e.targets = append(e.targets, t.Name)
		}
		if len(e.notes) == 0 {
			e.notes = rd.Env.Notes
		}
	}
	if len(list) < 2 {
		return nil
	}
	// In the order of the experiment's targets (matrix.target), not of
	// the runs.
	first := func(e *engine) int {
		for i, t := range d.Plan.Targets {
			if slices.Contains(e.targets, t.Name) {
				return i
			}
		}
		return len(d.Plan.Targets)
	}
	slices.SortStableFunc(list, func(a, b *engine) int { return first(a) - first(b) })
	v := &enginesView{}
	var topics []string
	for _, e := range list {
		col := e.product
		if len(e.targets) > 0 {
			col += ": " + strings.Join(e.targets, ", ")
		}
		v.Columns = append(v.Columns, col)
		for _, n := range e.notes {
			if !slices.Contains(topics, n.Topic) {
				topics = append(topics, n.Topic)
			}
		}
	}
	for _, t := range topics {
		row := engineRow{Topic: t}
		if h, ok := noteTopics[t]; ok {
			row.Topic = h
		}
		for _, e := range list {
			text := "(not recorded)"
			for _, n := range e.notes {
				if n.Topic == t {
					text = n.Text
				}
			}
			row.Texts = append(row.Texts, text)
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}
