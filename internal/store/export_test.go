package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Set TUNEBENCH_UPDATE_GOLDEN=1 to rewrite the golden files after an
// intended change of the export format.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("TUNEBENCH_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// exportRun has the awkward cases: series saved interleaved and out of name
// order, a series with a missing second, NaN and Inf values, a name that needs
// CSV quoting, embedded JSON with unsorted keys and big numbers, histograms
// out of order.
func exportRun() *Run {
	start := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)
	return &Run{
		ID:         7,
		Experiment: "fs-compare",
		Workload:   "tpcb",
		Variant:    "simple-update",
		Status:     StatusInterrupted,
		StartedAt:  start,
		EndedAt:    start.Add(90 * time.Second),
		Params:     json.RawMessage(`{"scale":10,  "clients":[8,16], "seed": 12345678901234567890, "dsn":"host=/tmp password=xxxxx"}`),
		Env:        json.RawMessage(`{"host": {"os": "linux", "cpus": 2}, "driver": {"go_version": "go1.26"}}`),
		Summary:    json.RawMessage(`{"tps": 1500.25, "latency_ms": {"p99": 4.5, "p50": 1.25}, "note": "<ok> & done"}`),
		Check:      nil,
		Series: []Point{
			{Series: "tps", T: 1, V: 1500},
			{Series: "p95_ms", T: 1, V: 2.5},
			{Series: "tps", T: 2, V: 1499.5},
			{Series: "p95_ms", T: 2, V: math.NaN()},
			{Series: "tps", T: 3, V: 1e-7},
			{Series: "cpu, user %", T: 3, V: 42},
			{Series: "p95_ms", T: 3, V: math.Inf(1)},
			{Series: "tps", T: 0.5, V: 2e21},
		},
		Histograms: []Histogram{
			{Op: "update", Class: "ok", Kind: KindLatency, Encoded: []byte("HISTFAAAAB")},
			{Op: "select", Class: "ok", Kind: KindService, Encoded: []byte{0, 1, 2, 0xfe, 0xff}},
			{Op: "select", Class: "ok", Kind: KindLag, Encoded: []byte{}},
		},
	}
}

func TestExportJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := ExportJSON(&buf, exportRun()); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "export.json", buf.Bytes())

	// It is one valid JSON document that decodes back to the run's content.
	var doc struct {
		Format     string                  `json:"format"`
		ID         int64                   `json:"id"`
		StartedAt  time.Time               `json:"started_at"`
		Params     map[string]any          `json:"params"`
		Check      *json.RawMessage        `json:"check"`
		Series     map[string][][]*float64 `json:"series"`
		Histograms []struct {
			Op, Class, Kind, Encoding, Data string
		} `json:"histograms"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	r := exportRun()
	if doc.Format != ExportFormat || doc.ID != 7 || !doc.StartedAt.Equal(r.StartedAt) || doc.Check != nil {
		t.Errorf("decoded header: %+v", doc)
	}
	if len(doc.Series["tps"]) != 4 || *doc.Series["tps"][3][1] != 2e21 || doc.Series["p95_ms"][1][1] != nil {
		t.Errorf("decoded series: %v", doc.Series)
	}
	if len(doc.Histograms) != 3 {
		t.Fatalf("histograms: %+v", doc.Histograms)
	}
	raw, err := base64.StdEncoding.DecodeString(doc.Histograms[1].Data)
	if err != nil || !bytes.Equal(raw, []byte{0, 1, 2, 0xfe, 0xff}) || doc.Histograms[1].Kind != KindService {
		t.Errorf("histogram 1: %+v %v %v", doc.Histograms[1], raw, err)
	}
}

func TestExportCSVGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := ExportCSV(&buf, exportRun()); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "export.csv", buf.Bytes())

	recs, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || len(recs[0]) != 4 || recs[0][1] != "cpu, user %" {
		t.Errorf("csv shape: %q", recs)
	}
}

func TestExportEmptyRun(t *testing.T) {
	r := &Run{ID: 1, Workload: "storage", Status: StatusFailed}
	var j, c bytes.Buffer
	if err := ExportJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "export_empty.json", j.Bytes())
	if !json.Valid(j.Bytes()) {
		t.Error("invalid JSON")
	}
	if err := ExportCSV(&c, r); err != nil {
		t.Fatal(err)
	}
	if c.String() != "t_s\n" {
		t.Errorf("csv of an empty run: %q", c.String())
	}
}

// The export of a stored run equals the export of the run before saving.
func TestExportAfterRoundTrip(t *testing.T) {
	s := openTemp(t)
	r := exportRun()
	r.ID = 0
	id, err := s.SaveRun(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := ExportJSON(&a, r); err != nil {
		t.Fatal(err)
	}
	if err := ExportJSON(&b, got); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("export changed by the round trip:\n%s\n---\n%s", a.String(), b.String())
	}
	a.Reset()
	b.Reset()
	if err := ExportCSV(&a, r); err != nil {
		t.Fatal(err)
	}
	if err := ExportCSV(&b, got); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("CSV changed by the round trip:\n%s\n---\n%s", a.String(), b.String())
	}
}

func TestAppendJSONFloat(t *testing.T) {
	cases := map[float64]string{
		0: "0", 1: "1", -2.5: "-2.5", 1e6: "1000000", 1e21: "1e+21", 1e-7: "1e-07",
		0.000001: "0.000001", math.NaN(): "null", math.Inf(-1): "null",
	}
	for f, want := range cases {
		got := string(appendJSONFloat(nil, f))
		if got != want {
			t.Errorf("%v: %q, want %q", f, got, want)
		}
		if want != "null" {
			var back float64
			if err := json.Unmarshal([]byte(got), &back); err != nil || back != f {
				t.Errorf("%v: %q does not round-trip (%v, %v)", f, got, back, err)
			}
		}
	}
}
