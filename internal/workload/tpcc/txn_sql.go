package tpcc

import (
	"fmt"
	"strings"
)

// The transactions' SQL is written once, as templates with named
// placeholders ({w}, {d}, ...), and rendered two ways:
//   - for --mode sql as prepared statements, {name} -> $k (numbered by first
//     appearance), with the parameter types fixed at prepare time;
//   - for --mode procs inside the PL/pgSQL functions, {name} -> the
//     function's argument p_name (or its local variable, see plName).
//
// Both modes thus run the same statements on the server and have the same
// effects on the database; they differ in where the control flow runs and
// in the number of round trips.

// param names one input of a transaction.
type param uint8

const (
	pW         param = iota // warehouse of the transaction (the terminal's)
	pD                      // district
	pC                      // customer id
	pCW                     // customer's warehouse (Payment)
	pCD                     // customer's district (Payment)
	pCLast                  // customer last name (by-name selection)
	pAmount                 // Payment amount
	pItems                  // New-Order item ids
	pSupply                 // New-Order supply warehouses
	pQty                    // New-Order quantities
	pOID                    // New-Order order id (sql mode's second round trip)
	pCarrier                // Delivery carrier
	pThreshold              // Stock-Level threshold
	pLines                  // New-Order lines as JSON [[item, supply, qty], ...] (MariaDB)
	pOLCnt                  // New-Order line count (MariaDB)
	pAllLocal               // New-Order O_ALL_LOCAL (MariaDB)
	numParams
)

// pkind is how a parameter is typed and encoded on the wire.
type pkind uint8

const (
	kInt      pkind = iota // int4, binary
	kIntArray              // int4[], binary
	kNumeric               // numeric, text ("1234.56")
	kText                  // text, text
)

var paramDefs = [numParams]struct {
	name string
	kind pkind
}{
	pW:         {"w", kInt},
	pD:         {"d", kInt},
	pC:         {"c", kInt},
	pCW:        {"cw", kInt},
	pCD:        {"cd", kInt},
	pCLast:     {"c_last", kText},
	pAmount:    {"amount", kNumeric},
	pItems:     {"items", kIntArray},
	pSupply:    {"supply", kIntArray},
	pQty:       {"qty", kIntArray},
	pOID:       {"o_id", kInt},
	pCarrier:   {"carrier", kInt},
	pThreshold: {"threshold", kInt},
	pLines:     {"lines", kText},
	pOLCnt:     {"ol_cnt", kInt},
	pAllLocal:  {"all_local", kInt},
}

func paramByName(name string) (param, bool) {
	for i, p := range paramDefs {
		if p.name == name {
			return param(i), true
		}
	}
	return 0, false
}

// render replaces each {name} of tmpl with repl(param).
func render(tmpl string, repl func(param) string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			panic("tpcc: unterminated placeholder in " + tmpl)
		}
		p, ok := paramByName(tmpl[i+1 : i+j])
		if !ok {
			panic("tpcc: unknown placeholder " + tmpl[i:i+j+1])
		}
		b.WriteString(tmpl[:i])
		b.WriteString(repl(p))
		tmpl = tmpl[i+j+1:]
	}
}

// positional renders tmpl for a prepared statement and returns the
// parameters in $k order.
func positional(tmpl string) (string, []param) {
	var order []param
	sql := render(tmpl, func(p param) string {
		for k, q := range order {
			if q == p {
				return fmt.Sprintf("$%d", k+1)
			}
		}
		order = append(order, p)
		return fmt.Sprintf("$%d", len(order))
	})
	return sql, order
}

// plName is the PL/pgSQL name of a parameter: the function argument p_name,
// except the order id, a local variable of tpcc_new_order.
func plName(p param) string {
	if p == pOID {
		return "v_o_id"
	}
	return "p_" + paramDefs[p].name
}

// plpgsql renders tmpl for a PL/pgSQL function body.
func plpgsql(tmpl string) string { return render(tmpl, plName) }

// stmt is one prepared statement of a worker.
type stmt struct {
	name   string
	sql    string
	params []param
	idx    int // in the session's statements
}

func newStmt(name, tmpl string) *stmt {
	sql, ps := positional(tmpl)
	return &stmt{name: name, sql: sql, params: ps}
}

// plainStmt is a statement without parameters (BEGIN, COMMIT, ...).
func plainStmt(name, sql string) *stmt { return &stmt{name: name, sql: sql} }

// customerByName selects the customer of a by-name lookup: among the n
// customers of the district with that last name, ordered by first name, the
// one at position ceil(n/2) (clauses 2.5.2.2 and 2.6.2.2; MiddleIndex). The
// c_id tie-break makes the choice deterministic should two first names be
// equal. wp and dp are the placeholders of the customer's warehouse and
// district.
func customerByName(wp, dp string) string {
	return `(SELECT s.c_id FROM (SELECT c_id, row_number() OVER (ORDER BY c_first, c_id) AS rn, count(*) OVER () AS n
		FROM customer WHERE c_w_id = ` + wp + ` AND c_d_id = ` + dp + ` AND c_last = {c_last}) s
	WHERE s.rn = (s.n + 1) / 2)`
}

// isolationSQL maps the --isolation values to SQL.
var isolationSQL = map[string]string{
	"read-committed":  "READ COMMITTED",
	"repeatable-read": "REPEATABLE READ",
	"serializable":    "SERIALIZABLE",
}
