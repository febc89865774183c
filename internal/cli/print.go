package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/workload"
)

// table prints columns, right-aligned (or left-aligned with newLeftTable).
type table struct {
	tw   *tabwriter.Writer
	left bool
}

func newTable(s *State) *table {
	return &table{tw: tabwriter.NewWriter(s.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)}
}

func newLeftTable(s *State) *table {
	return &table{tw: tabwriter.NewWriter(s.Stdout, 0, 0, 2, ' ', 0), left: true}
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(c, "\t", " ")
	}
	line := strings.Join(cells, "\t")
	if !t.left {
		line += "\t" // right-aligned cells end with a tab
	}
	fmt.Fprintln(t.tw, line)
}
func (t *table) flush() { t.tw.Flush() }

// printBlocks prints a workload's view: lines, and tables right-aligned.
func (s *State) printBlocks(bs []results.Block) {
	for _, b := range bs {
		if b.Table == nil {
			s.printf("%s\n", b.Text)
			continue
		}
		t := newTable(s)
		t.row(b.Table.Columns...)
		for _, r := range b.Table.Rows {
			t.row(r...)
		}
		t.flush()
	}
}

// loadBar renders load progress: an updating bar on a terminal, otherwise a
// plain line every few seconds (logs stay readable).
type loadBar struct {
	s        *State
	last     time.Time
	lastLine string
	every    time.Duration
}

func newLoadBar(s *State) *loadBar {
	every := 3 * time.Second
	if s.StderrTTY {
		every = 200 * time.Millisecond
	}
	return &loadBar{s: s, every: every}
}

// update renders one progress report (always the final one).
func (b *loadBar) update(p workload.LoadProgress) {
	now := time.Now()
	if !p.Final && now.Sub(b.last) < b.every {
		return
	}
	b.last = now
	frac := p.Frac
	if frac < 0 {
		frac = 0
		if p.TotalRows > 0 {
			frac = float64(p.Rows) / float64(p.TotalRows)
		}
	}
	frac = max(0, min(frac, 1))
	rate := 0.0
	if p.Elapsed > 0 {
		rate = float64(p.Rows) / p.Elapsed.Seconds()
	}
	eta := "-"
	if p.ETA >= 0 && !p.Final {
		eta = p.ETA.Round(time.Second).String()
	}
	const width = 30
	filled := int(frac * width)
	bar := strings.Repeat("#", filled) + strings.Repeat(".", width-filled)
	line := fmt.Sprintf("[%s] %5.1f%% %s rows, %s rows/s, %s elapsed, ETA %s  (%s)",
		bar, 100*frac, results.Human(float64(p.Rows)), results.Human(rate), p.Elapsed.Round(100*time.Millisecond), eta, p.What)
	if b.s.StderrTTY {
		b.s.eprintf("\r%-110s", line)
		if p.Final {
			b.s.eprintf("\n")
		}
		return
	}
	if line != b.lastLine {
		b.s.eprintf("%s\n", line)
		b.lastLine = line
	}
}

// optionsDoc is docs/options.md: every workload's options.
func optionsDoc(reg *workload.Registry) string {
	var b strings.Builder
	b.WriteString(`# Workload options

Every option of every workload, as the command-line flag and as the key of an
experiment file (docs/experiments.md). Both come from one declaration in the
workload's package, and so do this page (` + "`tunebench workloads --markdown`" + `;
a test fails when it is out of date) and ` + "`tunebench workloads NAME`" + `. Options
without an experiment key are set by the experiment itself (the seed, loading
into a fresh database) or are for the command line only. Besides these, every
run command takes --results, --json, --experiment, --listen and --listen-linger
(the live view: docs/live.md); the commands of workloads with a database take
--dsn, --server-dir, --database, --set and --no-samplers, and those the
executor drives take --progress.
`)
	for _, w := range reg.All() {
		b.WriteString("\n")
		b.WriteString(optionsMarkdown(w))
	}
	return b.String()
}

// optionsMarkdown is a workload's options as Markdown tables, one per
// command (docs/options.md is made of these).
func optionsMarkdown(w workload.Workload) string {
	var b strings.Builder
	m := w.Meta()
	fmt.Fprintf(&b, "## %s\n\n%s.\n", m.Name, m.Description)
	for _, ph := range []struct {
		p    option.Phase
		cmd  string
		have bool
	}{
		{option.PhaseLoad, "load", isA[workload.Loader](w)},
		{option.PhaseRun, "run", isA[workload.Runner](w)},
		{option.PhaseCheck, "check", isA[workload.Checker](w)},
	} {
		set := w.Options().Phase(ph.p)
		if !ph.have || len(set) == 0 {
			continue
		}
		head := "`tunebench " + ph.cmd + " " + m.Name + "`"
		if ph.p == option.PhaseRun && m.Command != "" {
			head += " (or `tunebench " + m.Command + "`)"
		}
		fmt.Fprintf(&b, "\n### %s\n\n| flag | experiment key | type | default | what |\n|---|---|---|---|---|\n", head)
		for _, o := range set {
			if o.Hidden {
				continue
			}
			flag := "`--" + o.Flag() + "`"
			if o.Short != "" {
				flag += ", `-" + o.Short + "`"
			}
			key := "`" + o.Name + "`"
			if o.FlagOnly || o.Check {
				key = "-"
			}
			def := o.DefaultValue()
			if o.DefaultText != "" {
				def = option.Spell(o.DefaultText, option.Flag)
			}
			if def == "" {
				def = "-"
			}
			doc := o.Doc
			if len(o.Enum) > 0 {
				doc += " (" + strings.Join(o.Enum, ", ") + ")"
			}
			if o.HasMin || o.HasMax {
				doc += bounds(o)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", flag, key, o.Kind.TypeName(), strings.ReplaceAll(def, "|", "\\|"), strings.ReplaceAll(doc, "|", "\\|"))
		}
	}
	return b.String()
}

func bounds(o option.Option) string {
	unit := ""
	if o.Kind == option.KindDuration {
		unit = " s"
	}
	switch {
	case o.HasMin && o.HasMax:
		return fmt.Sprintf("; %s%s to %s%s", option.FormatNum(o.Min), unit, option.FormatNum(o.Max), unit)
	case o.HasMin:
		return fmt.Sprintf("; at least %s%s", option.FormatNum(o.Min), unit)
	}
	return fmt.Sprintf("; at most %s%s", option.FormatNum(o.Max), unit)
}

func isA[T any](w workload.Workload) bool {
	_, ok := w.(T)
	return ok
}
