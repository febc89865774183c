package results

import (
	"encoding/json"
	"strings"
	"testing"
)

type extra struct {
	VUsers int     `json:"vusers"`
	NOPM   float64 `json:"nopm"`
}

type selfExtra struct {
	Dir       string  `json:"dir"`
	Errors    int64   `json:"errors"`
	DurationS float64 `json:"duration_s"`
}

func (x *selfExtra) Metric(name string) (float64, bool) {
	if name == "twice_errors" {
		return 2 * float64(x.Errors), true
	}
	return 0, false
}

func extras(name string) (Extra, bool, bool) {
	switch name {
	case "oltp":
		return &extra{}, true, true
	case "disk":
		return &selfExtra{}, false, true
	}
	return nil, false, false
}

// A summary is one JSON object: the common fields, the executor's and the
// workload's own, each key once; it decodes back into the same types.
func TestSummaryRoundTrip(t *testing.T) {
	s := &Summary{SchemaVersion: SchemaVersion, RunID: 7, Workload: "oltp", Status: "ok",
		Measured: &Measured{Clients: 4, TPS: 123.5, Script: "procs"}, Extra: &extra{VUsers: 4, NOPM: 999}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not one object: %v\n%s", err, b)
	}
	for k, want := range map[string]any{"schema_version": 2.0, "run_id": 7.0, "workload": "oltp", "clients": 4.0, "tps": 123.5, "vusers": 4.0, "nopm": 999.0, "script": "procs"} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	if n := strings.Count(string(b), `"workload"`); n != 1 {
		t.Errorf("workload appears %d times", n)
	}
	d, err := Decode(b, extras)
	if err != nil {
		t.Fatal(err)
	}
	x, ok := d.Extra.(*extra)
	if !ok || x.NOPM != 999 || d.Measured == nil || d.TPS != 123.5 || d.RunID != 7 || d.SchemaVersion != 2 {
		t.Errorf("decoded %+v %+v %+v", d, d.Measured, d.Extra)
	}
	if v, ok := d.Metric("nopm"); !ok || v != 999 {
		t.Errorf("metric nopm %v %v", v, ok)
	}
	if v, ok := d.Metric("latency_ms.p95"); !ok || v != 0 {
		t.Errorf("nested metric %v %v", v, ok)
	}
	if _, ok := d.Metric("nope"); ok {
		t.Error("a missing metric was found")
	}
}

// A version 1 summary (no schema_version) of a workload the executor does
// not measure keeps its own errors and duration_s: the executor's part is
// left out, and the workload's Metric computes what it lacks.
func TestDecodeVersion1(t *testing.T) {
	raw := []byte(`{"run_id":3,"workload":"disk","status":"ok","dir":"/d","errors":2,"duration_s":5.5,"interrupted":false}`)
	d, err := Decode(raw, extras)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := d.Extra.(*selfExtra)
	if d.SchemaVersion != 1 || d.Measured != nil || x == nil || x.Errors != 2 || x.DurationS != 5.5 {
		t.Fatalf("decoded %+v measured %v extra %+v", d, d.Measured, x)
	}
	if v, ok := d.Metric("twice_errors"); !ok || v != 4 {
		t.Errorf("computed metric %v %v", v, ok)
	}
	// An unknown workload is measured when it has tps.
	d, err = Decode([]byte(`{"workload":"gone","tps":12,"clients":2}`), extras)
	if err != nil || d.Measured == nil || d.Clients != 2 || d.Extra != nil {
		t.Errorf("unknown workload: %+v %v", d, err)
	}
	if _, err := Decode([]byte(`{"workload":"oltp","schema_version":99}`), extras); err == nil || !strings.Contains(err.Error(), "upgrade") {
		t.Errorf("a newer schema: %v", err)
	}
}

// A typed nil Extra adds nothing (and does not break the save).
func TestTypedNilExtra(t *testing.T) {
	var x *extra
	b, err := json.Marshal(&Summary{Workload: "oltp", Extra: x})
	if err != nil || !json.Valid(b) || strings.Contains(string(b), "null}") {
		t.Errorf("%s %v", b, err)
	}
	if _, err := mergeObjects([]byte(`{"a":1}`), []byte(`[1]`)); err == nil {
		t.Error("merged an array")
	}
	if b, _ := mergeObjects([]byte(`{"a":1}`), []byte(`{}`)); string(b) != `{"a":1}` {
		t.Errorf("merge with empty: %s", b)
	}
}

func TestExtraAs(t *testing.T) {
	type mine struct{ N int }
	type other struct{ N int }
	if got := ExtraAs[mine](&Summary{Extra: &mine{N: 3}}); got.N != 3 {
		t.Errorf("own type: %+v", got)
	}
	for _, x := range []Extra{nil, &other{N: 3}, mine{N: 3}} {
		if got := ExtraAs[mine](&Summary{Extra: x}); got == nil || got.N != 0 {
			t.Errorf("Extra %#v: got %+v, want a zero value", x, got)
		}
	}
}
