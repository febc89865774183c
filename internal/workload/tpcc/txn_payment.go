package tpcc

// Payment (clause 2.5).

// paymentInput are the inputs of one Payment (clause 2.5.1).
type paymentInput struct {
	w, d    int
	cw, cd  int // the customer's warehouse and district
	c       int // customer id, when !byName
	byName  bool
	lastNum int // number of the last name, when byName
	amount  int // cents, 100..500000
	remote  bool
}

// drawPayment draws the inputs of a Payment for warehouse w (clause
// 2.5.1.2): the customer is in the home district in 85% of the cases, else
// in a random district of another warehouse (when there is one); it is
// selected by last name in 60% of the cases, by number otherwise; the
// amount is uniform in [1.00, 5000.00].
func (t *terminal) drawPayment(in *paymentInput, w int) {
	r := t.rng
	in.w = w
	in.d = t.district()
	in.cw, in.cd, in.remote = w, in.d, false
	if Uniform(r, 1, 100) > 85 && t.warehouses > 1 {
		in.cw = t.otherWarehouse(w)
		in.cd = t.district()
		in.remote = true
	}
	in.byName = Uniform(r, 1, 100) <= 60
	if in.byName {
		in.lastNum = t.c.LastNameNumber(r)
		in.c = 0
	} else {
		in.c = t.c.CustomerID(r)
		in.lastNum = 0
	}
	in.amount = Uniform(r, 100, 500000)
}

// paymentTmpl is the whole Payment as one statement: the warehouse's and
// district's year-to-date amounts, the customer's balance, year-to-date
// payment and payment count, the history row (H_DATA = W_NAME, four spaces,
// D_NAME), and for a customer with bad credit ("BC") the payment's
// C_ID, C_D_ID, C_W_ID, D_ID, W_ID and H_AMOUNT inserted at the left of
// C_DATA, which keeps at most 500 characters (clause 2.5.2.2). It returns
// what the terminal displays of the customer (the first 200 characters of
// C_DATA for bad credit). Every update goes through UPDATE ... RETURNING,
// so at read committed each works on the latest row version under its row
// lock. %CUST% is the customer's number: {c}, or the by-name selection.
const paymentTmpl = `WITH w AS (
  UPDATE warehouse SET w_ytd = w_ytd + {amount} WHERE w_id = {w}
  RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip),
d AS (
  UPDATE district SET d_ytd = d_ytd + {amount} WHERE d_w_id = {w} AND d_id = {d}
  RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip),
c AS (
  UPDATE customer SET
    c_balance = c_balance - {amount},
    c_ytd_payment = c_ytd_payment + {amount},
    c_payment_cnt = c_payment_cnt + 1,
    c_data = CASE WHEN c_credit = 'BC' THEN left(c_id || ' ' || c_d_id || ' ' || c_w_id || ' ' || {d} || ' ' || {w} || ' ' || {amount}::numeric(6,2) || ' | ' || c_data, 500) ELSE c_data END
  WHERE c_w_id = {cw} AND c_d_id = {cd} AND c_id = %CUST%
  RETURNING c_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone,
    c_since, c_credit, c_credit_lim, c_discount, c_balance,
    CASE WHEN c_credit = 'BC' THEN left(c_data, 200) END AS c_data),
h AS (
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
  SELECT c.c_id, {cd}, {cw}, {d}, {w}, now(), {amount}, w.w_name || '    ' || d.d_name FROM w, d, c)
SELECT c.c_id, c.c_first, c.c_middle, c.c_last, c.c_balance, c.c_credit, c.c_data, w.w_name, d.d_name
FROM w, d, c`

// paymentColumns is the result type of paymentTmpl as declared by the
// tpcc_payment function.
const paymentColumns = `c_id int, c_first varchar, c_middle char(2), c_last varchar, c_balance numeric,
  c_credit char(2), c_data text, w_name varchar, d_name varchar`

var (
	paymentByID   = replaceCust(paymentTmpl, "{c}")
	paymentByName = replaceCust(paymentTmpl, customerByName("{cw}", "{cd}"))
)
