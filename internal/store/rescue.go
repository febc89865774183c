package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
)

// RescueFormat identifies a rescue file: a run that could not be saved in
// its store, written by Rescue and brought in later by ImportRun
// (`tunebench results import`). It changes when the layout changes
// incompatibly.
const RescueFormat = "tunebench.rescue.v1"

// rescueGzipAbove is the size of JSON above which a rescue file is written
// gzip-compressed (its name then ends in .json.gz).
const rescueGzipAbove = 1 << 20

// rescueFile is a rescue file's JSON: one object holding everything SaveRun
// writes for the run (its row, series, histograms and plan link), exactly:
// times in integer nanoseconds, values that JSON cannot carry as strings,
// the stored JSON texts as they are.
type rescueFile struct {
	Format    string    `json:"format"`
	WrittenAt time.Time `json:"written_at"`
	Store     string    `json:"store"` // the store the run was meant for
	Error     string    `json:"error"` // why it was not saved there
	Run       rescueRun `json:"run"`
}

type rescueRun struct {
	Experiment    string           `json:"experiment"`
	Workload      string           `json:"workload"`
	Variant       string           `json:"variant"`
	Status        string           `json:"status"`
	StartedAt     *int64           `json:"started_at_ns"` // Unix nanoseconds; null when unknown
	EndedAt       *int64           `json:"ended_at_ns"`
	SummarySchema int              `json:"summary_schema"`
	Params        json.RawMessage  `json:"params,omitempty"` // absent for SQL NULL
	Env           json.RawMessage  `json:"env,omitempty"`
	Summary       json.RawMessage  `json:"summary,omitempty"`
	Check         json.RawMessage  `json:"check,omitempty"`
	Series        []rescueSeries   `json:"series"`
	Histograms    []rescueHist     `json:"histograms"`
	Intervals     []rescueInterval `json:"interval_histograms,omitempty"`
	Link          *rescueLink      `json:"plan_link,omitempty"`
}

// rescueSeries is one series, its points in saved order.
type rescueSeries struct {
	Name string        `json:"name"`
	T    []float64     `json:"t"`
	V    []rescueFloat `json:"v"`
}

type rescueHist struct {
	Op    string `json:"op"`
	Class string `json:"class"`
	Kind  string `json:"kind"`
	Data  []byte `json:"data"` // HdrHistogram V2 compressed encoding, base64
}

type rescueInterval struct {
	T    float64 `json:"t"`
	Kind string  `json:"kind"`
	Data []byte  `json:"data"`
}

// rescueLink is a PlanLink; on import the experiment is found by the run's
// experiment name (ids differ between stores).
type rescueLink struct {
	ExperimentID int64       `json:"experiment_id"`
	PlanIndex    int         `json:"plan_index"`
	Config       string      `json:"config"`
	XName        string      `json:"x_name"`
	XValue       rescueFloat `json:"x_value"`
	Repetition   int         `json:"repetition"`
	Warmup       bool        `json:"warmup"`
	Status       string      `json:"status"`
}

// rescueFloat is a float64 in JSON that keeps NaN and ±Inf (as the strings
// "NaN", "+Inf" and "-Inf").
type rescueFloat float64

func (f rescueFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func (f *rescueFloat) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*f = rescueFloat(math.NaN())
	case `"+Inf"`:
		*f = rescueFloat(math.Inf(1))
	case `"-Inf"`:
		*f = rescueFloat(math.Inf(-1))
	default:
		v, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return fmt.Errorf("%s is not a number", b)
		}
		*f = rescueFloat(v)
	}
	return nil
}

// RescueError is a save that failed, with the rescue file its run was
// written to instead.
type RescueError struct {
	Path  string // the rescue file
	Store string // the store the run was meant for
	Err   error  // why saving failed
}

func (e *RescueError) Error() string {
	return e.Err.Error() + "; the complete result was written to " + e.Path
}

func (e *RescueError) Unwrap() error { return e.Err }

// RescuedTo returns the rescue file err names, if a run was rescued.
func RescuedTo(err error) (string, bool) {
	var re *RescueError
	if errors.As(err, &re) {
		return re.Path, true
	}
	return "", false
}

// Rescue is what to do when SaveRun (or SaveRunWithSummary) failed with
// cause: it writes r, as the save would have stored it, to a rescue file
// beside the store, else in the first of fallback (directories) that takes
// it. It returns the error to report: a *RescueError whose hint is the
// import command, with the kind of cause, or cause itself (with why) when
// no file could be written. A run the store would refuse whatever its state
// (see SaveRun's checks, secrets included) is not written anywhere.
func (s *Store) Rescue(r *Run, cause error, fallback ...string) error {
	if err := validateRun(r); err != nil {
		return cause
	}
	data, err := encodeRescue(r, s.path, cause)
	if err != nil {
		return errs.Wrap(errs.KindOf(cause), cause, "", "%v; no rescue file either (%v)", cause, err)
	}
	name := rescueName(s.path, r, len(data) > rescueGzipAbove)
	if len(data) > rescueGzipAbove {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(data)
		if err := zw.Close(); err != nil {
			return errs.Wrap(errs.KindOf(cause), cause, "", "%v; no rescue file either (%v)", cause, err)
		}
		data = buf.Bytes()
	}
	var tried []string
	for _, dir := range append([]string{filepath.Dir(s.path)}, fallback...) {
		if dir == "" {
			continue
		}
		path, err := writeRescue(dir, name, data)
		if err == nil {
			return errs.Wrap(errs.KindOf(cause), &RescueError{Path: path, Store: s.path, Err: cause},
				"bring it in once the store is repaired or has room, or into another store: tunebench results import "+
					shellQuote(path)+" --results "+shellQuote(s.path), "")
		}
		tried = append(tried, err.Error())
	}
	return errs.Wrap(errs.KindOf(cause), cause, "",
		"the result is lost: saving failed and no rescue file could be written (%s)", strings.Join(tried, "; "))
}

// encodeRescue is r's rescue file, as JSON.
func encodeRescue(r *Run, storePath string, cause error) ([]byte, error) {
	rr := rescueRun{
		Experiment: r.Experiment, Workload: r.Workload, Variant: r.Variant, Status: r.Status,
		StartedAt: nanos(r.StartedAt), EndedAt: nanos(r.EndedAt), SummarySchema: r.SummarySchema,
		Params: r.Params, Env: r.Env, Summary: r.Summary, Check: r.Check,
		Series: []rescueSeries{}, Histograms: []rescueHist{},
	}
	names, groups := sortedSeries(r.Series)
	for _, n := range names {
		rs := rescueSeries{Name: n, T: make([]float64, 0, len(groups[n])), V: make([]rescueFloat, 0, len(groups[n]))}
		for _, i := range groups[n] {
			rs.T = append(rs.T, r.Series[i].T)
			rs.V = append(rs.V, rescueFloat(r.Series[i].V))
		}
		rr.Series = append(rr.Series, rs)
	}
	for _, h := range r.Histograms {
		enc := h.Encoded
		if enc == nil {
			enc = []byte{}
		}
		rr.Histograms = append(rr.Histograms, rescueHist{Op: h.Op, Class: h.Class, Kind: h.Kind, Data: enc})
	}
	for _, h := range r.Intervals {
		rr.Intervals = append(rr.Intervals, rescueInterval{T: h.T, Kind: h.Kind, Data: h.Encoded})
	}
	if l := r.Link; l != nil {
		rr.Link = &rescueLink{ExperimentID: l.ExperimentID, PlanIndex: l.PlanIndex, Config: l.Config, XName: l.XName,
			XValue: rescueFloat(l.XValue), Repetition: l.Repetition, Warmup: l.Warmup, Status: l.Status}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the stored JSON texts stay as they are
	err := enc.Encode(rescueFile{Format: RescueFormat, WrittenAt: time.Now().UTC(), Store: storePath,
		Error: cause.Error(), Run: rr})
	return buf.Bytes(), err
}

func nanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

// rescueName is the file name of r's rescue file: the store's name, the
// run's start (UTC) and its workload.
func rescueName(storePath string, r *Run, gz bool) string {
	start := r.StartedAt
	if start.IsZero() {
		start = time.Now()
	}
	w := strings.Map(func(c rune) rune {
		if c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return c
		}
		return '_'
	}, r.Workload)
	name := filepath.Base(storePath) + ".rescue-" + start.UTC().Format("20060102T150405Z") + "-" + w + ".json"
	if gz {
		name += ".gz"
	}
	return name
}

// writeRescue writes data to a new file in dir, through a temporary file
// renamed into place, and returns its path. An existing file of that name
// is kept: the new one gets a numbered name.
func writeRescue(dir, name string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o600) // it holds the environment snapshot, like the store
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	base, ext := name, ""
	for _, e := range []string{".json.gz", ".json"} {
		if strings.HasSuffix(name, e) {
			base, ext = strings.TrimSuffix(name, e), e
			break
		}
	}
	path := filepath.Join(dir, name)
	for i := 2; ; i++ {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			break
		}
		path = filepath.Join(dir, base+"-"+strconv.Itoa(i)+ext)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if d, err := os.Open(dir); err == nil { // the rename is durable too
		d.Sync()
		d.Close()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path, nil
	}
	return abs, nil
}

// shellQuote quotes a path for a command line when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+=:,@%", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Rescued is a run read back from a rescue file.
type Rescued struct {
	Run       *Run
	Store     string    // the store it was meant for
	Error     string    // why it was not saved there
	WrittenAt time.Time // when the rescue file was written
}

// ReadRescue reads a rescue file (plain or gzip-compressed JSON). A file
// that is not one, is incomplete or holds a run the store would refuse is a
// usage error that says so.
func ReadRescue(path string) (*Rescued, error) {
	const hint = "give the rescue file a failed save named (*.rescue-*.json or .json.gz) as it was written; `tunebench results export` files cannot be imported"
	bad := func(format string, a ...any) error {
		return errs.New(errs.KindUsage, hint, "cannot import %s: "+format, append([]any{path}, a...)...)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "give the path of the rescue file the failed save printed", "cannot read rescue file %s", path)
	}
	defer f.Close()
	var rd io.Reader = f
	head := make([]byte, 2)
	n, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, bad("%v", err)
	}
	if n == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, bad("it is not valid gzip (%v)", err)
		}
		rd = zr
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, bad("it cannot be read to its end (%v)", err)
	}
	var probe struct {
		Format any `json:"format"`
	}
	if json.Unmarshal(b, &probe) != nil || probe.Format == nil {
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, bad("it is not a tunebench rescue file (not complete JSON: %v)", err)
		}
		return nil, bad("it is not a tunebench rescue file (no \"format\" field)")
	}
	if f, _ := probe.Format.(string); f != RescueFormat {
		return nil, badFormat(path, fmt.Sprint(probe.Format), hint)
	}
	var doc rescueFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, bad("it is not a complete tunebench rescue file (%v)", err)
	}
	rr := doc.Run
	r := &Run{
		Experiment: rr.Experiment, Workload: rr.Workload, Variant: rr.Variant, Status: rr.Status,
		StartedAt: fromNanos(rr.StartedAt), EndedAt: fromNanos(rr.EndedAt), SummarySchema: rr.SummarySchema,
		Params: rr.Params, Env: rr.Env, Summary: rr.Summary, Check: rr.Check,
	}
	for _, s := range rr.Series {
		if len(s.T) != len(s.V) {
			return nil, bad("series %q has %d times and %d values", s.Name, len(s.T), len(s.V))
		}
		for i := range s.T {
			r.Series = append(r.Series, Point{Series: s.Name, T: s.T[i], V: float64(s.V[i])})
		}
	}
	for _, h := range rr.Histograms {
		enc := h.Data
		if enc == nil {
			enc = []byte{}
		}
		r.Histograms = append(r.Histograms, Histogram{Op: h.Op, Class: h.Class, Kind: h.Kind, Encoded: enc})
	}
	for _, h := range rr.Intervals {
		r.Intervals = append(r.Intervals, IntervalHistogram{T: h.T, Kind: h.Kind, Encoded: h.Data})
	}
	if l := rr.Link; l != nil {
		r.Link = &PlanLink{ExperimentID: l.ExperimentID, PlanIndex: l.PlanIndex, Config: l.Config, XName: l.XName,
			XValue: float64(l.XValue), Repetition: l.Repetition, Warmup: l.Warmup, Status: l.Status}
	}
	if err := validateRun(r); err != nil {
		return nil, bad("it does not hold a run tunebench can store (%s)", strings.TrimPrefix(err.Error(), "save run: "))
	}
	return &Rescued{Run: r, Store: doc.Store, Error: doc.Error, WrittenAt: doc.WrittenAt}, nil
}

func badFormat(path, format, hint string) error {
	why := fmt.Sprintf("it has format %q, not %q", format, RescueFormat)
	switch {
	case format == ExportFormat:
		why = "it is a `tunebench results export` file, not a rescue file"
	case strings.HasPrefix(format, "tunebench.rescue."):
		why += " (written by a newer tunebench?)"
		hint = "import it with the tunebench that wrote it, or a newer one"
	}
	return errs.New(errs.KindUsage, hint, "cannot import %s: %s", path, why)
}

func fromNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// ImportRun saves a rescued run in one transaction, through the same code
// as SaveRunWithSummary (summary gives the stored summary for the new run
// id). A run already in the store (the same workload, start and end to the
// nanosecond) is refused with a usage error: the file was imported before.
// The plan link is kept when the store has the run's experiment (found by
// name) and that plan entry has no stored run yet; otherwise the run is
// imported without it, and a note says why.
func (s *Store) ImportRun(ctx context.Context, r *Run, summary func(id int64) (json.RawMessage, error)) (int64, []string, error) {
	if r == nil {
		return 0, nil, errs.New(errs.KindInternal, "", "import run: nil run")
	}
	started, err := timeToNanos("started_at", r.StartedAt)
	if err != nil {
		return 0, nil, err
	}
	ended, err := timeToNanos("ended_at", r.EndedAt)
	if err != nil {
		return 0, nil, err
	}
	var notes []string
	prep := func(ctx context.Context, tx *sql.Tx) error {
		notes = nil
		dberr := func(err error) error {
			return errs.Wrap(errs.KindInternal, err, "", "import run into %s", s.path)
		}
		var have int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM runs WHERE workload = ? AND started_at IS ? AND ended_at IS ? ORDER BY id LIMIT 1`,
			r.Workload, started, ended).Scan(&have)
		switch {
		case err == nil:
			return errs.New(errs.KindUsage, "nothing to import: the rescue file may be removed",
				"this run is already in %s as run %d (same workload, start and end): the file was imported before", s.path, have)
		case !isNoRows(err):
			return dberr(err)
		}
		l := r.Link
		if l == nil {
			return nil
		}
		drop := func(why string) {
			notes = append(notes, why)
			r.Link = nil
		}
		if r.Experiment == "" {
			drop("the run's plan entry is not kept: it names no experiment")
			return nil
		}
		var expID int64
		err = tx.QueryRowContext(ctx, `SELECT id FROM experiments WHERE name = ?`, r.Experiment).Scan(&expID)
		if isNoRows(err) {
			drop(fmt.Sprintf("experiment %q is not in %s: the run is imported without its plan entry", r.Experiment, s.path))
			return nil
		}
		if err != nil {
			return dberr(err)
		}
		var runID sql.NullInt64
		err = tx.QueryRowContext(ctx, `SELECT run_id FROM experiment_runs WHERE experiment_id = ? AND plan_index = ?`,
			expID, l.PlanIndex).Scan(&runID)
		if err != nil && !isNoRows(err) {
			return dberr(err)
		}
		if runID.Valid {
			drop(fmt.Sprintf("plan entry #%d of experiment %q already has run %d: the run is imported without the link", l.PlanIndex+1, r.Experiment, runID.Int64))
			return nil
		}
		l.ExperimentID = expID
		return nil
	}
	link := r.Link
	id, err := s.saveRun(ctx, r, summary, prep)
	if err != nil {
		r.Link = link
		return 0, nil, err
	}
	return id, notes, nil
}
