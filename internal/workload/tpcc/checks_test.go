package tpcc

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestCheckSelected(t *testing.T) {
	for _, c := range []struct {
		o    CheckOptions
		want []int
	}{
		{CheckOptions{}, []int{1, 2, 3, 4, 5, 7, 8, 9}},
		{CheckOptions{Expensive: true}, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12}},
		{CheckOptions{All: true}, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{CheckOptions{Conditions: []int{11, 2, 2}, All: true}, []int{2, 11}},
	} {
		got, err := c.o.Selected()
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: %v %v, want %v", c.o, got, err, c.want)
		}
	}
	for _, bad := range [][]int{{0}, {13}, {1, -1}} {
		if _, err := (CheckOptions{Conditions: bad}).Selected(); err == nil {
			t.Errorf("conditions %v accepted", bad)
		}
	}
	for i, c := range Conditions() {
		if c.Number != i+1 || c.Clause != fmt.Sprintf("3.3.2.%d", i+1) || c.Name == "" || c.Unit == "" {
			t.Errorf("condition %d: %+v", i+1, c)
		}
	}
}

// TestCheckAfterLoad: all twelve pass on a fresh load, each with its timing,
// and the report survives a JSON round trip (it is stored with runs).
func TestCheckAfterLoad(t *testing.T) {
	t.Parallel()
	conn := testConn(t, loadedDB(t, 2))
	rep := mustPassAll(t, conn)
	if rep.Seconds <= 0 {
		t.Errorf("report without a duration: %+v", rep)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back CheckReport
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, rep) {
		t.Errorf("JSON round trip: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), `"clause":"3.3.2.10"`) || !strings.Contains(string(b), `"violations":0`) {
		t.Errorf("JSON lacks fields: %s", b)
	}
	// The default tier is the eight cheap conditions.
	def, err := Check(ctxT(t, time.Minute), conn, CheckOptions{})
	if err != nil || !def.Passed || len(def.Conditions) != 8 {
		t.Errorf("default check: %+v %v", def, err)
	}
}

// TestCheckConditionsFail breaks each condition in its own transaction
// (rolled back afterwards) and checks that exactly the conditions the
// change breaks fail, with the right keys. Every one of the twelve has a
// case where it fails.
func TestCheckConditionsFail(t *testing.T) {
	t.Parallel()
	conn := testConn(t, loadedDB(t, 1))
	all, _ := CheckOptions{All: true}.Selected()
	cases := []struct {
		name    string
		sql     []string
		fail    map[int][]string // condition -> expected example keys (nil: any)
		ignored []int            // conditions whose outcome this case does not pin
	}{
		{"warehouse YTD off by a cent", []string{
			"update warehouse set w_ytd = w_ytd + 0.01 where w_id = 1",
		}, map[int][]string{1: {"w=1"}, 8: {"w=1"}}, nil},
		{"D_NEXT_O_ID ahead of the orders", []string{
			"update district set d_next_o_id = 3002 where d_w_id = 1 and d_id = 3",
		}, map[int][]string{2: {"w=1 d=3"}}, nil},
		{"a gap in NEW-ORDER", []string{
			"delete from new_order where no_w_id = 1 and no_d_id = 4 and no_o_id = 2500",
		}, map[int][]string{3: {"w=1 d=4"}, 5: {"w=1 d=4 o=2500"}, 11: {"w=1 d=4"}}, nil},
		{"an order line lost", []string{
			"delete from order_line where ol_w_id = 1 and ol_d_id = 5 and ol_o_id = 10 and ol_number = 1",
		}, map[int][]string{4: {"w=1 d=5"}, 6: {"w=1 d=5 o=10"}}, nil},
		{"a carrier on an undelivered order", []string{
			"update orders set o_carrier_id = 3 where o_w_id = 1 and o_d_id = 6 and o_id = 2500",
		}, map[int][]string{5: {"w=1 d=6 o=2500"}, 7: nil}, nil},
		{"an order line moved to the next order", []string{
			"update order_line set ol_o_id = 101, ol_number = 99 where ol_w_id = 1 and ol_d_id = 7 and ol_o_id = 100 and ol_number = 1",
		}, map[int][]string{6: {"w=1 d=7 o=100", "w=1 d=7 o=101"}}, nil},
		{"a delivered line without a delivery date", []string{
			"update order_line set ol_delivery_d = null where ol_w_id = 1 and ol_d_id = 8 and ol_o_id = 5 and ol_number = 1",
		}, map[int][]string{7: {"w=1 d=8 o=5 ol=1"}}, nil},
		{"a payment in history only", []string{
			"insert into history values (7, 1, 1, 1, 1, now(), 5.00, 'x')",
		}, map[int][]string{8: {"w=1"}, 9: {"w=1 d=1"}, 10: {"w=1 d=1 c=7"}}, nil},
		{"a history row booked to another district", []string{
			"update history set h_d_id = 2 where h_c_w_id = 1 and h_c_d_id = 1 and h_c_id = 9",
		}, map[int][]string{9: {"w=1 d=1", "w=1 d=2"}}, nil},
		{"balance and YTD payment shifted", []string{
			"update customer set c_balance = c_balance + 1, c_ytd_payment = c_ytd_payment - 1 where c_w_id = 1 and c_d_id = 2 and c_id = 3",
		}, map[int][]string{10: {"w=1 d=2 c=3"}}, nil},
		{"a correct Delivery of the oldest new order", []string{
			// What Delivery does for one district (clause 2.7.4.2): only 11,
			// the load-only condition, breaks.
			"delete from new_order where no_w_id = 1 and no_d_id = 9 and no_o_id = 2101",
			"update orders set o_carrier_id = 4 where o_w_id = 1 and o_d_id = 9 and o_id = 2101",
			"update order_line set ol_delivery_d = now() where ol_w_id = 1 and ol_d_id = 9 and ol_o_id = 2101",
			`update customer set c_balance = c_balance + (select sum(ol_amount) from order_line where ol_w_id = 1 and ol_d_id = 9 and ol_o_id = 2101),
				c_delivery_cnt = c_delivery_cnt + 1
			 where (c_w_id, c_d_id, c_id) = (select o_w_id, o_d_id, o_c_id from orders where o_w_id = 1 and o_d_id = 9 and o_id = 2101)`,
		}, map[int][]string{11: {"w=1 d=9"}}, nil},
		{"YTD payment off", []string{
			"update customer set c_ytd_payment = c_ytd_payment + 1 where c_w_id = 1 and c_d_id = 10 and c_id = 3000",
		}, map[int][]string{12: {"w=1 d=10 c=3000"}}, nil},
	}
	failedSomewhere := map[int]bool{}
	for _, c := range cases {
		rep := checkCorrupted(t, conn, c.sql, all)
		var failed []int
		for _, r := range rep.Conditions {
			if r.Error != "" {
				t.Errorf("%s: condition %d: query error %s", c.name, r.Number, r.Error)
			}
			if !r.Passed {
				failed = append(failed, r.Number)
				failedSomewhere[r.Number] = true
			}
			want, shouldFail := c.fail[r.Number]
			if shouldFail && want != nil && !reflect.DeepEqual(r.Examples, want) {
				t.Errorf("%s: condition %d examples %v, want %v", c.name, r.Number, r.Examples, want)
			}
			if shouldFail && want != nil && r.Violations != int64(len(want)) {
				t.Errorf("%s: condition %d counts %d violations, want %d", c.name, r.Number, r.Violations, len(want))
			}
		}
		var wantFailed []int
		for n := range c.fail {
			wantFailed = append(wantFailed, n)
		}
		sort.Ints(wantFailed)
		if !reflect.DeepEqual(failed, wantFailed) {
			t.Errorf("%s: conditions %v failed, want %v", c.name, failed, wantFailed)
		}
		if rep.Passed {
			t.Errorf("%s: report passed", c.name)
		}
	}
	for n := 1; n <= 12; n++ {
		if !failedSomewhere[n] {
			t.Errorf("condition %d never failed", n)
		}
	}
	// Everything was rolled back.
	mustPassAll(t, conn)
}

// checkCorrupted applies stmts in a transaction, checks inside it, and
// rolls back.
func checkCorrupted(t *testing.T, conn *pgx.Conn, stmts []string, nums []int) CheckReport {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	for _, s := range stmts {
		tag, err := tx.Exec(ctx, s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if (tag.Insert() || tag.Update() || tag.Delete()) && tag.RowsAffected() == 0 {
			t.Fatalf("%s changed no row", s)
		}
	}
	rep, err := checkIn(ctx, tx, nums)
	if err != nil {
		t.Fatalf("checkIn: %v", err)
	}
	return rep
}

// TestCheckQueryErrorContinues: a condition whose query fails counts as
// failed with the error, and the others are still evaluated.
func TestCheckQueryErrorContinues(t *testing.T) {
	t.Parallel()
	conn := testConn(t, loadedDB(t, 1))
	all, _ := CheckOptions{All: true}.Selected()
	rep := checkCorrupted(t, conn, []string{"alter table history rename column h_amount to h_amt"}, all)
	if rep.Passed || len(rep.Conditions) != 12 {
		t.Fatalf("report %+v", rep)
	}
	for _, r := range rep.Conditions {
		usesHistory := r.Number == 8 || r.Number == 9 || r.Number == 10
		if usesHistory != (r.Error != "") || r.Passed == usesHistory {
			t.Errorf("condition %d: passed %v error %q", r.Number, r.Passed, r.Error)
		}
	}
}
