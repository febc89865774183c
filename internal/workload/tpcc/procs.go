package tpcc

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/driver"
)

// --mode procs: the five transactions as server-side PL/pgSQL functions, one
// round trip per transaction (a prepared SELECT of the function, in
// autocommit: the call is the transaction). The functions run the same
// statement templates as --mode sql (see txn_sql.go), so both modes have
// the same effects on the database.

// ProcNames lists the functions InstallProcs creates.
var ProcNames = []string{"tpcc_new_order", "tpcc_payment", "tpcc_order_status", "tpcc_delivery", "tpcc_stock_level"}

// procSignatures are the argument types, for DROP FUNCTION.
var procSignatures = map[string]string{
	"tpcc_new_order":    "int, int, int, int[], int[], int[]",
	"tpcc_payment":      "int, int, int, int, int, text, numeric",
	"tpcc_order_status": "int, int, int, text",
	"tpcc_delivery":     "int, int",
	"tpcc_stock_level":  "int, int, int",
}

// procDDL returns the CREATE OR REPLACE FUNCTION statements.
func procDDL() []string {
	return []string{
		// New-Order: the item check comes after the lines, as in clause
		// 2.4.2.3 the unused item is the last one; raising the error undoes
		// the district's order number, the order and the stock updates.
		// STRICT: a missing district or customer is an error (P0002), as
		// in --mode sql, not an order for nobody.
		`CREATE OR REPLACE FUNCTION tpcc_new_order(p_w int, p_d int, p_c int, p_items int[], p_supply int[], p_qty int[])
RETURNS int LANGUAGE plpgsql AS $tpcc$
DECLARE
  v_o_id int;
  v_d_tax numeric;
  v_w_tax numeric;
  v_discount numeric;
  v_last varchar;
  v_credit char(2);
  v_lines int;
  v_amount numeric;
BEGIN
  ` + plpgsql(noDistrict) + `
  INTO STRICT v_d_tax, v_o_id;
  ` + plpgsql(noCustomer) + `
  INTO STRICT v_discount, v_last, v_credit, v_w_tax;
  ` + plpgsql(noOrder) + `;
  ` + plpgsql(noLines) + `
  INTO v_lines, v_amount;
  IF v_lines < cardinality(p_items) THEN
    RAISE EXCEPTION 'tpcc_new_order: item not found (warehouse %, district %, order %)', p_w, p_d, v_o_id
      USING ERRCODE = '` + SQLStateItemNotFound + `';
  END IF;
  RETURN v_o_id;
END
$tpcc$`,

		// Payment: p_c_last NULL selects the customer by number p_c.
		`CREATE OR REPLACE FUNCTION tpcc_payment(p_w int, p_d int, p_cw int, p_cd int, p_c int, p_c_last text, p_amount numeric)
RETURNS TABLE (` + paymentColumns + `) LANGUAGE plpgsql AS $tpcc$
#variable_conflict use_column
BEGIN
  IF p_c_last IS NULL THEN
    RETURN QUERY ` + plpgsql(paymentByID) + `;
  ELSE
    RETURN QUERY ` + plpgsql(paymentByName) + `;
  END IF;
END
$tpcc$`,

		`CREATE OR REPLACE FUNCTION tpcc_order_status(p_w int, p_d int, p_c int, p_c_last text)
RETURNS TABLE (` + orderStatusColumns + `) LANGUAGE plpgsql AS $tpcc$
#variable_conflict use_column
BEGIN
  IF p_c_last IS NULL THEN
    RETURN QUERY ` + plpgsql(orderStatusByID) + `;
  ELSE
    RETURN QUERY ` + plpgsql(orderStatusByName) + `;
  END IF;
END
$tpcc$`,

		`CREATE OR REPLACE FUNCTION tpcc_delivery(p_w int, p_carrier int)
RETURNS int LANGUAGE plpgsql AS $tpcc$
DECLARE
  v_delivered int;
BEGIN
  -- The lock on the oldest order depends on the isolation level (see
  -- deliveryTmpl in tunebench's source).
  IF current_setting('transaction_isolation') = 'read committed' THEN
    ` + plpgsql(deliverySQL(isolationSQL["read-committed"])) + `
    INTO v_delivered;
  ELSE
    ` + plpgsql(deliverySQL(isolationSQL["serializable"])) + `
    INTO v_delivered;
  END IF;
  RETURN v_delivered;
END
$tpcc$`,

		`CREATE OR REPLACE FUNCTION tpcc_stock_level(p_w int, p_d int, p_threshold int)
RETURNS int LANGUAGE plpgsql AS $tpcc$
DECLARE
  v_low int;
BEGIN
  ` + plpgsql(stockLevelTmpl) + `
  INTO v_low;
  RETURN v_low;
END
$tpcc$`,
	}
}

// The calls of --mode procs, as templates (rendered like the sql mode's).
const (
	procNewOrder    = `SELECT tpcc_new_order({w}, {d}, {c}, {items}, {supply}, {qty})`
	procPayment     = `SELECT * FROM tpcc_payment({w}, {d}, {cw}, {cd}, {c}, {c_last}, {amount})`
	procOrderStatus = `SELECT * FROM tpcc_order_status({w}, {d}, {c}, {c_last})`
	procDelivery    = `SELECT tpcc_delivery({w}, {carrier})`
	procStockLevel  = `SELECT tpcc_stock_level({w}, {d}, {threshold})`
)

// InstallProcs creates (or replaces) the PL/pgSQL functions of --mode procs
// in the database of conn, in one transaction. It is idempotent; a function
// whose result type changed since an older tunebench made it is dropped and
// made again.
func InstallProcs(ctx context.Context, conn *pgx.Conn) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// One installer at a time: the shards of a split run (or two runs)
		// that replace the functions together collide in pg_proc.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('tunebench tpcc procs'))"); err != nil {
			return err
		}
		for i, ddl := range procDDL() {
			name := ProcNames[i]
			if _, err := tx.Exec(ctx, "SAVEPOINT tpcc_proc"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, ddl)
			if err != nil && driver.SQLState(err) == "42P13" { // cannot change the return type
				if _, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT tpcc_proc"); rerr != nil {
					return rerr
				}
				if _, err = tx.Exec(ctx, fmt.Sprintf("DROP FUNCTION IF EXISTS %s(%s)", name, procSignatures[name])); err == nil {
					_, err = tx.Exec(ctx, ddl)
				}
			}
			if err != nil {
				return fmt.Errorf("creating function %s: %w", name, err)
			}
		}
		return nil
	})
}
