package tpcc

import (
	"encoding/binary"
	"io"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// The data generator: rows of the initial population (clause 4.3.3.1)
// written straight into the COPY buffer that pgconn hands to Read, in COPY
// text or binary format, with no allocation per row. Every (table,
// warehouse) pair draws from its own PCG stream seeded from the load seed, so
// a chunk generates the same rows whichever worker runs it, and a resumed
// load produces the same database as an uninterrupted one.

// Copy formats.
const (
	FormatText   = "text"
	FormatBinary = "binary"
)

// maxRow bounds the encoded size of any row (a customer with a 500-character
// C_DATA is the longest: about 800 bytes in binary format).
const maxRow = 1024

// pgEpoch is the PostgreSQL timestamp epoch.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// enc appends fields of one COPY row in text or binary format.
type enc struct {
	bin    bool
	b      []byte
	fields int    // text: fields written in the current row
	tsText []byte // the load timestamp, text form
	tsBin  int64  // the load timestamp, microseconds since 2000-01-01
}

func newEnc(format string, ts time.Time) enc {
	// A timestamp without time zone: the wall-clock fields of ts, whole
	// seconds, identical in both formats.
	wall := time.Date(ts.Year(), ts.Month(), ts.Day(), ts.Hour(), ts.Minute(), ts.Second(), 0, time.UTC)
	return enc{
		bin:    format == FormatBinary,
		tsText: wall.AppendFormat(nil, "2006-01-02 15:04:05"),
		tsBin:  wall.Sub(pgEpoch).Microseconds(),
	}
}

// binaryHeader starts a binary COPY stream (signature, flags, extension length).
var binaryHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

func (e *enc) row(ncols int) {
	if e.bin {
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(ncols))
		return
	}
	e.fields = 0
}

func (e *enc) endRow() {
	if !e.bin {
		e.b = append(e.b, '\n')
	}
}

func (e *enc) sep() {
	if e.fields > 0 {
		e.b = append(e.b, '\t')
	}
	e.fields++
}

func (e *enc) int(v int) {
	if e.bin {
		e.b = append(e.b, 0, 0, 0, 4, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
		return
	}
	e.sep()
	e.b = strconv.AppendInt(e.b, int64(v), 10)
}

func (e *enc) null() {
	if e.bin {
		e.b = append(e.b, 0xff, 0xff, 0xff, 0xff)
		return
	}
	e.sep()
	e.b = append(e.b, '\\', 'N')
}

func (e *enc) ts() {
	if e.bin {
		e.b = append(e.b, 0, 0, 0, 8)
		e.b = binary.BigEndian.AppendUint64(e.b, uint64(e.tsBin))
		return
	}
	e.sep()
	e.b = append(e.b, e.tsText...)
}

var pow10 = [5]int64{1, 10, 100, 1000, 10000}

// num writes the exact decimal v / 10^scale (scale 0..4).
func (e *enc) num(v int64, scale int) {
	if !e.bin {
		e.sep()
		e.b = appendDecimal(e.b, v, scale)
		return
	}
	e.b = appendNumericBinary(e.b, v, scale)
}

// appendDecimal formats v / 10^scale with exactly scale fraction digits.
func appendDecimal(b []byte, v int64, scale int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	p := pow10[scale]
	b = strconv.AppendInt(b, v/p, 10)
	if scale == 0 {
		return b
	}
	b = append(b, '.')
	f := v % p
	for d := p / 10; d > 0; d /= 10 {
		b = append(b, byte('0'+f/d%10))
	}
	return b
}

// appendNumericBinary writes a numeric field in PostgreSQL's binary form:
// ndigits, weight, sign, dscale (int16 each), then base-10000 digits, most
// significant first, without leading or trailing zero digits.
func appendNumericBinary(b []byte, v int64, scale int) []byte {
	neg := v < 0
	if neg {
		v = -v
	}
	p := pow10[scale]
	ip, fp := v/p, (v%p)*(10000/p) // integer part; the fraction as one base-10000 digit
	var digits [8]uint16
	n := 0
	var rev [6]uint16
	k := 0
	for ip > 0 {
		rev[k] = uint16(ip % 10000)
		ip /= 10000
		k++
	}
	weight := k - 1
	for i := k - 1; i >= 0; i-- {
		digits[n] = rev[i]
		n++
	}
	if fp != 0 {
		if k == 0 {
			weight = -1
		}
		digits[n] = uint16(fp)
		n++
	}
	for n > 0 && digits[n-1] == 0 {
		n--
	}
	var sign uint16
	if n == 0 {
		weight = 0
	} else if neg {
		sign = 0x4000
	}
	b = binary.BigEndian.AppendUint32(b, uint32(8+2*n))
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = binary.BigEndian.AppendUint16(b, uint16(int16(weight)))
	b = binary.BigEndian.AppendUint16(b, sign)
	b = binary.BigEndian.AppendUint16(b, uint16(scale))
	for i := 0; i < n; i++ {
		b = binary.BigEndian.AppendUint16(b, digits[i])
	}
	return b
}

func (e *enc) str(s string) {
	if e.bin {
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(len(s)))
	} else {
		e.sep()
	}
	e.b = append(e.b, s...)
}

// strStart begins a string field of yet unknown length; strEnd finishes it.
func (e *enc) strStart() int {
	if e.bin {
		at := len(e.b)
		e.b = append(e.b, 0, 0, 0, 0)
		return at
	}
	e.sep()
	return 0
}

func (e *enc) strEnd(at int) {
	if e.bin {
		binary.BigEndian.PutUint32(e.b[at:], uint32(len(e.b)-at-4))
	}
}

// astr writes a random a-string of length [lo, hi].
func (e *enc) astr(r *rand.Rand, lo, hi int) {
	at := e.strStart()
	e.b = appendAlnum(e.b, r, Uniform(r, lo, hi))
	e.strEnd(at)
}

// nstr writes a random n-string (digits) of length n.
func (e *enc) nstr(r *rand.Rand, n int) {
	at := e.strStart()
	e.b = AppendNString(e.b, r, n, n)
	e.strEnd(at)
}

// letters writes n random upper-case letters (W_STATE, D_STATE, C_STATE).
func (e *enc) letters(r *rand.Rand, n int) {
	at := e.strStart()
	for i := 0; i < n; i++ {
		e.b = append(e.b, byte('A'+r.IntN(26)))
	}
	e.strEnd(at)
}

func (e *enc) zip(r *rand.Rand) {
	at := e.strStart()
	e.b = AppendZip(e.b, r)
	e.strEnd(at)
}

// data writes I_DATA / S_DATA: an a-string of [26..50] with "ORIGINAL" at a
// random position in 10% of the rows (clause 4.3.3.1).
func (e *enc) data(r *rand.Rand) {
	at := e.strStart()
	n := Uniform(r, 26, 50)
	if r.IntN(10) != 0 {
		e.b = appendAlnum(e.b, r, n)
	} else {
		pos := r.IntN(n - 8 + 1)
		e.b = appendAlnum(e.b, r, pos)
		e.b = append(e.b, "ORIGINAL"...)
		e.b = appendAlnum(e.b, r, n-pos-8)
	}
	e.strEnd(at)
}

// appendAlnum appends n random characters of the 62 letters and digits. It
// is AppendAString's faster twin for the bulk strings (C_DATA, S_DIST_xx:
// most of the generated bytes): each 64-bit draw gives 6 characters by
// multiply-shift (the leftover fraction keeps at least 28 bits, so each
// character's probability is within 1e-7 of 1/62). Measured: about 1 ns per
// character, a sixth of a draw per character.
func appendAlnum(b []byte, r *rand.Rand, n int) []byte {
	l := len(b)
	b = slices.Grow(b, n)[:l+n] // no allocation in the COPY buffer (maxRow is reserved)
	dst := b[l:]
	const m = uint64(len(alnum))
	for len(dst) >= 6 {
		x := r.Uint64()
		var c uint64
		c, x = bits.Mul64(x, m)
		dst[0] = alnum[c]
		c, x = bits.Mul64(x, m)
		dst[1] = alnum[c]
		c, x = bits.Mul64(x, m)
		dst[2] = alnum[c]
		c, x = bits.Mul64(x, m)
		dst[3] = alnum[c]
		c, x = bits.Mul64(x, m)
		dst[4] = alnum[c]
		c, _ = bits.Mul64(x, m)
		dst[5] = alnum[c]
		dst = dst[6:]
	}
	if len(dst) > 0 {
		x := r.Uint64()
		for i := range dst {
			var c uint64
			c, x = bits.Mul64(x, m)
			dst[i] = alnum[c]
		}
	}
	return b
}

// ---- per-table generators ----

// genState walks the rows of one chunk: table t for warehouses wlo..whi.
type genState struct {
	table      string
	seed       uint64
	c          Constants
	wlo, whi   int
	w, d, i, o int // cursor: warehouse, district, id (item/customer/order), order line number
	started    bool
	done       bool
	src        rand.PCG
	r          *rand.Rand
	olSrc      rand.PCG
	olRand     *rand.Rand
	olCnt      [OrdersPerDistrict + 1]uint8 // O_OL_CNT of each order of the current district
	perm       []int                        // O_C_ID of each order of the current district
}

// Streams of the PCG generator: one per table and warehouse, one per
// district for the order-line counts (shared by orders and order_line).
func streamID(table string, w, d int) uint64 {
	var t uint64
	for i := 0; i < len(table); i++ {
		t = t*131 + uint64(table[i])
	}
	return t<<40 ^ uint64(w)<<8 ^ uint64(d)
}

func newGen(table string, seed int64, c Constants, wlo, whi int) *genState {
	g := &genState{table: table, seed: uint64(seed), c: c, wlo: wlo, whi: whi}
	g.r = rand.New(&g.src)
	g.olRand = rand.New(&g.olSrc)
	return g
}

// olCounts fills cnt[1..3000] with the O_OL_CNT of each order of district
// (w, d): the same numbers for the orders and the order_line generators.
func olCounts(seed uint64, w, d int, src *rand.PCG, r *rand.Rand, cnt *[OrdersPerDistrict + 1]uint8) int64 {
	src.Seed(seed, streamID("olcnt", w, d))
	var total int64
	for o := 1; o <= OrdersPerDistrict; o++ {
		n := Uniform(r, MinOrderLines, MaxOrderLines)
		cnt[o] = uint8(n)
		total += int64(n)
	}
	return total
}

// orderLineRows is the number of order lines of warehouses wlo..whi.
func orderLineRows(seed int64, wlo, whi int) int64 {
	var src rand.PCG
	r := rand.New(&src)
	var cnt [OrdersPerDistrict + 1]uint8
	var n int64
	for w := wlo; w <= whi; w++ {
		for d := 1; d <= DistrictsPerWarehouse; d++ {
			n += olCounts(uint64(seed), w, d, &src, r, &cnt)
		}
	}
	return n
}

// chunkRows is the exact number of rows of table for warehouses wlo..whi.
func chunkRows(table string, seed int64, wlo, whi int) int64 {
	nw := int64(whi - wlo + 1)
	switch table {
	case "item":
		return Items
	case "warehouse":
		return nw
	case "district":
		return nw * DistrictsPerWarehouse
	case "customer", "history":
		return nw * DistrictsPerWarehouse * CustomersPerDistrict
	case "orders":
		return nw * DistrictsPerWarehouse * OrdersPerDistrict
	case "new_order":
		return nw * DistrictsPerWarehouse * NewOrdersPerDistrict
	case "order_line":
		return orderLineRows(seed, wlo, whi)
	case "stock":
		return nw * StockPerWarehouse
	}
	return 0
}

// enterWarehouse reseeds the row stream for warehouse w.
func (g *genState) enterWarehouse(w int) {
	g.w = w
	g.src.Seed(g.seed, streamID(g.table, w, 0))
}

// enterDistrict prepares the per-district state of orders and order_line.
func (g *genState) enterDistrict(d int) {
	g.d = d
	switch g.table {
	case "orders":
		olCounts(g.seed, g.w, d, &g.olSrc, g.olRand, &g.olCnt)
		g.perm = Permutation(g.r, CustomersPerDistrict) // O_C_ID: a permutation of 1..3000
	case "order_line":
		olCounts(g.seed, g.w, d, &g.olSrc, g.olRand, &g.olCnt)
	}
}

// next appends one row and advances; false when the chunk is exhausted.
func (g *genState) next(e *enc) bool {
	if g.done {
		return false
	}
	if !g.started {
		g.started = true
		if g.table == "item" {
			g.src.Seed(g.seed, streamID("item", 0, 0))
			g.i = 1
		} else {
			g.enterWarehouse(g.wlo)
			g.enterDistrict(1)
			g.i, g.o = 1, 1
			if g.table == "new_order" {
				g.i = FirstUndelivered
			}
		}
	}
	r := g.r
	switch g.table {
	case "item":
		e.row(5)
		e.int(g.i)
		e.int(Uniform(r, 1, 10000))
		e.astr(r, 14, 24)
		e.num(int64(Uniform(r, 100, 10000)), 2)
		e.data(r)
		e.endRow()
		g.i++
		g.done = g.i > Items
	case "warehouse":
		e.row(9)
		e.int(g.w)
		e.astr(r, 6, 10)
		e.astr(r, 10, 20)
		e.astr(r, 10, 20)
		e.astr(r, 10, 20)
		e.letters(r, 2)
		e.zip(r)
		e.num(int64(Uniform(r, 0, 2000)), 4)
		e.num(30000000, 2) // W_YTD 300,000.00
		e.endRow()
		g.advanceWarehouse()
	case "district":
		e.row(11)
		e.int(g.d)
		e.int(g.w)
		e.astr(r, 6, 10)
		e.astr(r, 10, 20)
		e.astr(r, 10, 20)
		e.astr(r, 10, 20)
		e.letters(r, 2)
		e.zip(r)
		e.num(int64(Uniform(r, 0, 2000)), 4)
		e.num(3000000, 2) // D_YTD 30,000.00
		e.int(OrdersPerDistrict + 1)
		e.endRow()
		g.advanceDistrict()
	case "customer":
		c := g.i
		e.row(21)
		e.int(c)
		e.int(g.d)
		e.int(g.w)
		e.astr(r, 8, 16)
		e.str("OE")
		at := e.strStart()
		if c <= 1000 {
			e.b = AppendLastName(e.b, c-1)
		} else {
			e.b = AppendLastName(e.b, g.c.LastNameNumber(r))
		}
		e.strEnd(at)
		e.astr(r, 10, 20)
		e.astr(r, 10, 20)
		e.astr(r, 10, 20)
		e.letters(r, 2)
		e.zip(r)
		e.nstr(r, 16)
		e.ts()
		if r.IntN(10) == 0 {
			e.str("BC")
		} else {
			e.str("GC")
		}
		e.num(5000000, 2) // C_CREDIT_LIM 50,000.00
		e.num(int64(Uniform(r, 0, 5000)), 4)
		e.num(-1000, 2) // C_BALANCE -10.00
		e.num(1000, 2)  // C_YTD_PAYMENT 10.00
		e.int(1)
		e.int(0)
		e.astr(r, 300, 500)
		e.endRow()
		g.advanceID(CustomersPerDistrict)
	case "history":
		e.row(8)
		e.int(g.i)
		e.int(g.d)
		e.int(g.w)
		e.int(g.d)
		e.int(g.w)
		e.ts()
		e.num(1000, 2) // H_AMOUNT 10.00
		e.astr(r, 12, 24)
		e.endRow()
		g.advanceID(CustomersPerDistrict)
	case "orders":
		o := g.i
		e.row(8)
		e.int(o)
		e.int(g.d)
		e.int(g.w)
		e.int(g.perm[o-1])
		e.ts()
		if o < FirstUndelivered {
			e.int(Uniform(r, 1, 10))
		} else {
			e.null()
		}
		e.int(int(g.olCnt[o]))
		e.int(1)
		e.endRow()
		g.advanceID(OrdersPerDistrict)
	case "new_order":
		e.row(3)
		e.int(g.i)
		e.int(g.d)
		e.int(g.w)
		e.endRow()
		g.advanceID(OrdersPerDistrict)
		if g.i == 1 && !g.done {
			g.i = FirstUndelivered
		}
	case "order_line":
		o := g.i
		e.row(10)
		e.int(o)
		e.int(g.d)
		e.int(g.w)
		e.int(g.o)
		e.int(Uniform(r, 1, Items))
		e.int(g.w)
		if o < FirstUndelivered {
			e.ts()
			e.int(5)
			e.num(0, 2)
		} else {
			e.null()
			e.int(5)
			e.num(int64(Uniform(r, 1, 999999)), 2)
		}
		e.astr(r, 24, 24)
		e.endRow()
		g.o++
		if g.o > int(g.olCnt[o]) {
			g.o = 1
			g.advanceID(OrdersPerDistrict)
		}
	case "stock":
		e.row(17)
		e.int(g.i)
		e.int(g.w)
		e.int(Uniform(r, 10, 100))
		for k := 0; k < 10; k++ {
			e.astr(r, 24, 24)
		}
		e.int(0)
		e.int(0)
		e.int(0)
		e.data(r)
		e.endRow()
		g.i++
		if g.i > StockPerWarehouse {
			g.i = 1
			g.advanceWarehouse()
		}
	default:
		g.done = true
		return false
	}
	return true
}

func (g *genState) advanceWarehouse() {
	if g.w >= g.whi {
		g.done = true
		return
	}
	g.enterWarehouse(g.w + 1)
	g.enterDistrict(1)
}

func (g *genState) advanceDistrict() {
	if g.d >= DistrictsPerWarehouse {
		g.advanceWarehouse()
		return
	}
	g.enterDistrict(g.d + 1)
}

// advanceID moves to the next customer/order id, wrapping into the next
// district after last.
func (g *genState) advanceID(last int) {
	g.i++
	if g.i > last {
		g.i = 1
		g.advanceDistrict()
	}
}

// copySource is the io.Reader pgconn.CopyFrom reads: whole rows per Read.
type copySource struct {
	g       *genState
	e       enc
	started bool
	ended   bool
	rows    int64
	counter *atomic.Int64 // rows written, for progress
}

func (s *copySource) Read(p []byte) (int, error) {
	if s.ended {
		return 0, io.EOF
	}
	if len(p) < maxRow+len(binaryHeader) {
		return 0, io.ErrShortBuffer
	}
	s.e.b = p[:0]
	if !s.started {
		s.started = true
		if s.e.bin {
			s.e.b = append(s.e.b, binaryHeader...)
		}
	}
	var rows int64
	for len(p)-len(s.e.b) >= maxRow {
		if !s.g.next(&s.e) {
			s.ended = true
			if s.e.bin {
				s.e.b = append(s.e.b, 0xff, 0xff) // file trailer
			}
			break
		}
		rows++
	}
	s.rows += rows
	if s.counter != nil {
		s.counter.Add(rows)
	}
	n := len(s.e.b)
	s.e.b = nil
	if n == 0 && s.ended {
		return 0, io.EOF
	}
	return n, nil
}
