package tpcc

// Stock-Level (clause 2.8).

// stockLevelInput are the inputs of one Stock-Level (clause 2.8.1).
type stockLevelInput struct {
	w, d      int // d is the virtual user's fixed district
	threshold int
}

func (t *terminal) drawStockLevel(in *stockLevelInput, w int) {
	in.w = w
	in.d = t.slDistrict
	in.threshold = Uniform(t.rng, 10, 20)
}

// stockLevelTmpl counts the distinct items of the district's last 20
// orders whose stock at the home warehouse is below the threshold (clause
// 2.8.2.2). It needs only read committed (clause 3.4, level 1).
const stockLevelTmpl = `SELECT count(DISTINCT s.s_i_id)::int
FROM district d
JOIN order_line ol ON ol.ol_w_id = d.d_w_id AND ol.ol_d_id = d.d_id
  AND ol.ol_o_id >= d.d_next_o_id - 20 AND ol.ol_o_id < d.d_next_o_id
JOIN stock s ON s.s_w_id = d.d_w_id AND s.s_i_id = ol.ol_i_id
WHERE d.d_w_id = {w} AND d.d_id = {d} AND s.s_quantity < {threshold}`
