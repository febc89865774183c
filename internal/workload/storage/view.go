package storage

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/human"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/storage/fio"
)

// Summary is what a storage run adds to the summary (docs/storage.md).
type Summary struct {
	Dir          string     `json:"dir"`
	Device       bool       `json:"device,omitempty"`
	FioVersion   string     `json:"fio_version"`
	IOEngine     string     `json:"ioengine,omitempty"`
	IOEngineNote string     `json:"ioengine_note,omitempty"`
	Direct       bool       `json:"direct"`
	BlockBytes   int64      `json:"block_size_bytes,omitempty"`
	SizeBytes    int64      `json:"size_bytes,omitempty"`
	Jobs         int        `json:"jobs,omitempty"`
	IODepth      int        `json:"iodepth,omitempty"`
	RuntimeS     float64    `json:"runtime_s,omitempty"`
	DropCaches   DropCaches `json:"drop_caches"`
	JobFilePath  string     `json:"job_file_path,omitempty"`
	JobFile      string     `json:"job_file,omitempty"`
	Tests        []Test     `json:"tests"`
	// IOPS is the IOPS of every test's reads and writes together, the
	// headline of experiments (schema version 2).
	IOPS  float64 `json:"iops"`
	Error string  `json:"error,omitempty"`
}

// DropCaches records whether the page cache was dropped before each test.
type DropCaches struct {
	Requested bool   `json:"requested"`
	Done      bool   `json:"done"`
	Note      string `json:"note,omitempty"` // why not, when requested and not done
}

// Test is one test (or one job of a user's job file).
type Test struct {
	fio.Result
	JobFile       string  `json:"job_file,omitempty"` // the generated job file
	CachesDropped bool    `json:"caches_dropped"`
	ElapsedS      float64 `json:"elapsed_s"` // wall time of the fio process (file layout included)
	Interrupted   bool    `json:"interrupted,omitempty"`
}

func (s *Summary) totalIOPS() float64 {
	var n float64
	for _, t := range s.Tests {
		if t.Read != nil {
			n += t.Read.IOPS
		}
		if t.Write != nil {
			n += t.Write.IOPS
		}
	}
	return n
}

// Metric computes the IOPS headline of runs stored before it was a field.
func (s *Summary) Metric(name string) (float64, bool) {
	if name == "iops" {
		return s.totalIOPS(), true
	}
	return 0, false
}

// NewExtra decodes a storage summary's own fields.
func (Workload) NewExtra() results.Extra { return &Summary{} }

func extraOf(s *results.Summary) *Summary { return results.ExtraAs[Summary](s) }

// Brief is each test's IOPS (reads and writes together: rw-mix does both).
func (Workload) Brief(s *results.Summary) string {
	var parts []string
	for _, t := range extraOf(s).Tests {
		if t.Read == nil && t.Write == nil {
			continue
		}
		var v float64
		for _, d := range []*fio.Direction{t.Read, t.Write} {
			if d != nil {
				v += d.IOPS
			}
		}
		parts = append(parts, fmt.Sprintf("%s %.0f IOPS", t.Name, v))
	}
	return strings.Join(parts, ", ")
}

// testLine is a test's one-line result (progress).
func testLine(t Test) string {
	var parts []string
	for _, d := range []struct {
		name string
		d    *fio.Direction
	}{{"read", t.Read}, {"write", t.Write}} {
		if d.d != nil {
			parts = append(parts, fmt.Sprintf("%s %.1f MB/s, %.0f IOPS, p99 %s ms", d.name, d.d.MBps, d.d.IOPS, fmtMs(d.d.ClatMs.P99)))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no I/O")
	}
	extra := ""
	if t.Interrupted {
		extra = " (interrupted)"
	}
	if t.Error != 0 {
		extra += fmt.Sprintf(" (fio error %d)", t.Error)
	}
	return fmt.Sprintf("%s: %s%s", t.Name, strings.Join(parts, "; "), extra)
}

// Show is the tuning-guide table: a row per test.
func (Workload) Show(s *results.Summary) []results.Block {
	x := extraOf(s)
	tb := &results.Table{Columns: []string{"test", "read MB/s", "read IOPS", "read p99 ms", "write MB/s", "write IOPS", "write p99 ms"}}
	cells := func(d *fio.Direction) []string {
		if d == nil {
			return []string{"-", "-", "-"}
		}
		return []string{fmt.Sprintf("%.1f", d.MBps), fmt.Sprintf("%.0f", d.IOPS), fmtMs(d.ClatMs.P99)}
	}
	interrupted := false
	for _, t := range x.Tests {
		name := t.Name
		if t.Interrupted {
			name += "*"
			interrupted = true
		}
		tb.Row(append(append([]string{name}, cells(t.Read)...), cells(t.Write)...)...)
	}
	out := []results.Block{results.TableBlock(tb)}
	how := "buffered"
	if x.Direct {
		how = "direct I/O"
	}
	if x.JobFilePath == "" {
		out = append(out, results.Line(fmt.Sprintf("%s, ioengine %s, %s, %s blocks, %d job(s), iodepth %d; MB/s = 10^6 bytes/s; p99 = completion latency (fio clat)",
			x.FioVersion, x.IOEngine, how, fio.FormatSize(x.BlockBytes), x.Jobs, x.IODepth)))
	} else {
		out = append(out, results.Line(fmt.Sprintf("%s, job file %s; MB/s = 10^6 bytes/s; p99 = completion latency (fio clat)", x.FioVersion, x.JobFilePath)))
	}
	if interrupted {
		out = append(out, results.Line("* interrupted: figures over the part that ran"))
	}
	if x.DropCaches.Requested && !x.DropCaches.Done {
		out = append(out, results.Line("caches were NOT dropped: "+x.DropCaches.Note))
	}
	return out
}

// fmtMs shows milliseconds with at least three significant digits and at
// least three decimals (page-cache latencies are a few microseconds).
func fmtMs(v float64) string {
	dec := 3
	if v > 0 && v < 0.1 {
		dec = min(2-int(math.Floor(math.Log10(v))), 6)
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// Section is the report's storage part: a table of every test of every
// run, bars comparing the runs test by test, and each run's set-up.
func (Workload) Section(runs []*results.Run) (*results.Section, error) {
	v := &results.Section{ID: "storage", Title: "Storage baseline (fio)",
		Intro: "Bandwidth (MB/s, 10^6 bytes per second), IOPS and completion latency (ms) per fio test, as fio measured them. Bars compare the runs test by test."}
	table := results.Table{Left: 3, Columns: []string{"run", "test", "direction", "MB/s", "IOPS", "mean ms", "p50", "p95", "p99", "p99.9", "max", "caches dropped"}}
	type key struct{ test, dir string }
	var rowsOrder []key
	vals := map[key]map[int][2]float64{} // key -> run index -> MB/s, IOPS
	for ri, rd := range runs {
		s := &Summary{}
		if rd.Summary != nil {
			s = extraOf(rd.Summary)
		}
		r := results.RunView{RunID: rd.ID}
		add := func(k, val string) {
			if val != "" {
				r.Fields = append(r.Fields, results.Field{K: k, V: val})
			}
		}
		target := s.Dir
		if s.Device {
			target += " (block device)"
		}
		add("Target", target)
		add("fio", s.FioVersion)
		add("I/O engine", results.JoinNonEmpty(" ", s.IOEngine, results.Paren(s.IOEngineNote)))
		add("Direct I/O", strconv.FormatBool(s.Direct))
		if s.BlockBytes > 0 {
			add("Block size", human.Bytes(s.BlockBytes))
		}
		if s.SizeBytes > 0 {
			add("Size", human.Bytes(s.SizeBytes))
		}
		if s.Jobs > 0 {
			add("Jobs, I/O depth", fmt.Sprintf("%d, %d", s.Jobs, s.IODepth))
		}
		if s.RuntimeS > 0 {
			add("Runtime per test", strconv.FormatFloat(s.RuntimeS, 'f', -1, 64)+" s")
		}
		add("Job file", s.JobFilePath)
		if s.DropCaches.Requested {
			done := "not done"
			if s.DropCaches.Done {
				done = "done"
			}
			add("Drop caches", results.JoinNonEmpty(": ", done, s.DropCaches.Note))
		}
		r.Note = s.Error
		for _, t := range s.Tests {
			for _, dir := range []struct {
				name string
				d    *fio.Direction
			}{{"read", t.Read}, {"write", t.Write}} {
				if dir.d == nil {
					continue
				}
				l := dir.d.ClatMs
				table.Row("run "+strconv.FormatInt(rd.ID, 10), t.Name, dir.name,
					results.FmtNum(dir.d.MBps), results.FmtNum(dir.d.IOPS), results.FmtMs(l.Mean), fmtMsOpt(l.P50), fmtMsOpt(l.P95), fmtMsOpt(l.P99), fmtMsOpt(l.P999), results.FmtMs(l.Max),
					strconv.FormatBool(t.CachesDropped))
				k := key{t.Name, dir.name}
				if vals[k] == nil {
					vals[k] = map[int][2]float64{}
					rowsOrder = append(rowsOrder, k)
				}
				vals[k][ri] = [2]float64{dir.d.MBps, dir.d.IOPS}
			}
		}
		v.Runs = append(v.Runs, r)
	}
	if len(table.Rows) > 0 {
		v.Tables = append(v.Tables, table)
	}
	if len(rowsOrder) == 0 {
		return v, nil
	}
	cols := make([]string, len(runs))
	for i, rd := range runs {
		cols[i] = "run " + strconv.FormatInt(rd.ID, 10)
		if rd.Env != nil && rd.Env.DataDir != nil && rd.Env.DataDir.FSType != "" {
			cols[i] += " (" + rd.Env.DataDir.FSType + ")"
		}
	}
	for m, what := range []struct{ title, unit string }{{"Bandwidth per test", "MB/s"}, {"IOPS per test", "I/O per second"}} {
		chart := results.BarChart{Title: what.title, Unit: what.unit, Columns: cols}
		for _, k := range rowsOrder {
			b := results.Bar{Label: k.test + " " + k.dir}
			for ri := range runs {
				val := math.NaN()
				if x, ok := vals[k][ri]; ok {
					val = x[m]
				}
				b.Values = append(b.Values, val)
			}
			chart.Rows = append(chart.Rows, b)
		}
		if len(runs) == 1 {
			// One run: colour the bars by test, and name the unit only.
			chart.Columns = []string{what.unit}
			chart.ColorByRow = true
		}
		v.Bars = append(v.Bars, chart)
	}
	return v, nil
}

func fmtMsOpt(v float64) string {
	if v == 0 {
		return "-"
	}
	return results.FmtMs(v)
}
