package results

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/run"
)

// The executor's retries reach the summary (retries, attempt_failures by
// SQLSTATE), its terminal lines, and the status reasons their own lines;
// the reasons survive a round trip through JSON.
func TestRetriesAndReasonsInSummary(t *testing.T) {
	s := FromRun(&run.Result{Retries: 5, Retried: map[string]int64{"40001": 4, "40P01": 1}, SQLStates: map[string]int64{"40001": 2}, Errors: 2})
	if s.Retries != 5 || s.AttemptFailures["40001"] != 4 || s.AttemptFailures["40P01"] != 1 || s.BySQLState["40001"] != 2 {
		t.Errorf("retries %d, attempt_failures %v, errors_by_sqlstate %v", s.Retries, s.AttemptFailures, s.BySQLState)
	}
	var text []string
	for _, b := range OutcomeLines(s) {
		text = append(text, b.Text)
	}
	if got := strings.Join(text, "\n"); !strings.Contains(got, "retries: 5 failed attempts tried again, by SQLSTATE: 40001 4, 40P01 1") {
		t.Errorf("outcome lines lack the retries:\n%s", got)
	}

	s.Status = "errors"
	s.StatusReasons = []Reason{{Code: ReasonOutage, Detail: "the server was unreachable"}, {Code: ReasonErrors, Detail: "2 transactions ended in errors"}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"retries":5`, `"attempt_failures":{"40001":4,"40P01":1}`, `"status_reasons":[{"code":"outage","detail":"the server was unreachable"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("summary JSON lacks %s:\n%s", want, b)
		}
	}
	back, err := Decode(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := back.Doubts(); len(d) != 1 || d[0].Code != ReasonOutage {
		t.Errorf("doubts %+v, want the outage only", d)
	}
	// Errors within the threshold are no reason for the status: said as
	// errors.
	if l := StatusLines(back); len(l) != 2 || l[0].Text != "status errors: the server was unreachable" || l[1].Text != "errors: 2 transactions ended in errors" {
		t.Errorf("status lines %+v", l)
	}
}
