package dbgen

import (
	"fmt"
	"strconv"
)

// Table is one of the eight TPC-H tables.
type Table int

// The tables, in the order dbgen writes them.
const (
	Part Table = iota
	PartSupp
	Supplier
	Customer
	Orders
	Lineitem
	Nation
	Region
)

var tableNames = [...]string{"part", "partsupp", "supplier", "customer", "orders", "lineitem", "nation", "region"}

func (t Table) String() string { return tableNames[t] }

// Tables lists every table.
func Tables() []Table {
	return []Table{Part, PartSupp, Supplier, Customer, Orders, Lineitem, Nation, Region}
}

// ParseTable returns the table with that name.
func ParseTable(name string) (Table, error) {
	for i, n := range tableNames {
		if n == name {
			return Table(i), nil
		}
	}
	return 0, fmt.Errorf("no TPC-H table %q", name)
}

// Scale bases: rows per unit of scale factor (TPC-H clause 4.2.5).
const (
	supplierBase = 10_000
	partBase     = 200_000
	customerBase = 150_000
	ordersBase   = 1_500_000
	suppPerPart  = 4
	maxLines     = 7
	clerkBase    = 1000
)

// count is a table's size at a scale: the base times the scale factor,
// truncated, as the reference computes it.
func count(base int64, sf float64) int64 { return int64(float64(base) * sf) }

// Units returns how many generation units table t has at scale sf: rows,
// except for partsupp (one unit per part, 4 rows each) and lineitem (one unit
// per order, 1 to 7 rows each). Chunks of units generated separately and
// concatenated in order are the whole table.
func Units(t Table, sf float64) int64 {
	switch t {
	case Part, PartSupp:
		return count(partBase, sf)
	case Supplier:
		return count(supplierBase, sf)
	case Customer:
		return count(customerBase, sf)
	case Orders, Lineitem:
		return count(ordersBase, sf)
	case Nation:
		return NationCount
	default:
		return int64(len(regions.values))
	}
}

// RowsPerUnit is the average number of rows per unit (exact except for
// lineitem, whose mean is 4).
func RowsPerUnit(t Table) float64 {
	switch t {
	case PartSupp:
		return suppPerPart
	case Lineitem:
		return (1 + maxLines) / 2.0
	default:
		return 1
	}
}

// Format is how rows are written: fields separated by '|', and with
// Trailing a '|' after the last field too, as dbgen's .tbl files have.
// Without it the lines are PostgreSQL COPY text with DELIMITER '|' (no
// field ever holds '|', a backslash, a tab or a newline). Binary rows are
// PostgreSQL's binary COPY tuples for the column types of the tables
// (integer, bigint order keys, numeric, date, text), without the stream's
// header and trailer (BinaryHeader, BinaryTrailer).
type Format struct{ Trailing, Binary bool }

// TBL is dbgen's file format; COPY is the format COPY ... (DELIMITER '|')
// reads; Binary is the format COPY ... (FORMAT binary) reads.
var (
	TBL    = Format{Trailing: true}
	COPY   = Format{}
	Binary = Format{Binary: true}
)

// Generator writes the tables of one scale factor.
type Generator struct {
	sf     float64
	format Format
	pool   []byte
}

// New returns a generator for scale factor sf. The first call in a process
// builds the 300 MiB text pool (about a second).
func New(sf float64, f Format) *Generator {
	return &Generator{sf: sf, format: f, pool: textPool()}
}

// Append appends the rows of units [first, first+n) of table t (0-based; see
// Units) to buf and returns it with the number of rows written.
func (g *Generator) Append(buf []byte, t Table, first, n int64) ([]byte, int64) {
	w := g.writer(buf)
	switch t {
	case Part:
		g.part(&w, first, n)
	case PartSupp:
		g.partSupp(&w, first, n)
	case Supplier:
		g.supplier(&w, first, n)
	case Customer:
		g.customer(&w, first, n)
	case Orders:
		g.orders(&w, first, n, 0)
	case Lineitem:
		g.lineitems(&w, first, n, 0)
	case Nation:
		g.nation(&w, first, n)
	case Region:
		g.region(&w, first, n)
	}
	return w.buf, w.rows
}

// alnum is a v-string (addresses): a length between 0.4 and 1.6 times the
// average, then characters six bits at a time from draws that continue the
// row's stream without counting against it (nine draws per row).
type alnum struct {
	s        stream
	min, max int32
}

const alnumChars = "0123456789abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ,"

func newAlnum(seed int64, average int32) alnum {
	return alnum{s: newStream(seed, 9), min: int32(float64(average) * 0.4), max: int32(float64(average) * 1.6)}
}

func (a *alnum) write(w *writer) {
	n := int(a.s.intIn(a.min, a.max))
	chars := a.s // a copy: the characters do not advance the row's stream
	var bits int64
	w.open()
	for i := range n {
		if i%5 == 0 {
			bits = int64(chars.intIn(0, 1<<31-1))
		}
		w.buf = append(w.buf, alnumChars[bits&0x3f])
		bits >>= 6
	}
	w.close()
}

// phone is a phone number: the country code from the nation key, then three
// local parts (three draws per row).
type phone struct{ s stream }

func (p *phone) write(w *writer, nation int64) {
	a, b, c := p.s.intIn(100, 999), p.s.intIn(100, 999), p.s.intIn(1000, 9999)
	w.open()
	w.buf = strconv.AppendInt(w.buf, 10+nation%90, 10)
	w.buf = append(w.buf, '-')
	w.buf = strconv.AppendInt(w.buf, int64(a), 10)
	w.buf = append(w.buf, '-')
	w.buf = strconv.AppendInt(w.buf, int64(b), 10)
	w.buf = append(w.buf, '-')
	w.buf = strconv.AppendInt(w.buf, int64(c), 10)
	w.close()
}

func (g *Generator) nation(w *writer, first, n int64) {
	comment := newText(606179079, 72, 1)
	comment.s.skipRows(first)
	for k := first; k < first+n; k++ {
		w.row(4)
		w.int(k)
		w.str(nations.values[k])
		w.int(nations.runningWeight(k))
		w.bytes(comment.next(g.pool))
		w.end()
		comment.s.rowDone()
	}
}

func (g *Generator) region(w *writer, first, n int64) {
	comment := newText(1500869201, 72, 1)
	comment.s.skipRows(first)
	for k := first; k < first+n; k++ {
		w.row(3)
		w.int(k)
		w.str(regions.values[k])
		w.bytes(comment.next(g.pool))
		w.end()
		comment.s.rowDone()
	}
}

// partPrice is P_RETAILPRICE in cents (clause 4.2.3).
func partPrice(key int64) int64 {
	return 90000 + (key/10)%20001 + (key%1000)*100
}

func (g *Generator) part(w *writer, first, n int64) {
	name := newStream(709314158, int64(len(colors.values)))
	mfgr := newStream(1, 1)
	brand := newStream(46831694, 1)
	typ := newStream(1841581359, 1)
	size := newStream(1193163244, 1)
	container := newStream(727633698, 1)
	comment := newText(804159733, 14, 1)
	all := []*stream{&name, &mfgr, &brand, &typ, &size, &container, &comment.s}
	for _, s := range all {
		s.skipRows(first)
	}
	words := make([]string, len(colors.values))
	for k := first + 1; k <= first+n; k++ {
		w.row(9)
		w.int(k)
		// P_NAME: five distinct colours, by partially shuffling the list.
		copy(words, colors.values)
		for i := range int32(5) {
			j := name.intIn(i, int32(len(words))-1)
			words[i], words[j] = words[j], words[i]
		}
		w.open()
		for i := range 5 {
			if i > 0 {
				w.buf = append(w.buf, ' ')
			}
			w.buf = append(w.buf, words[i]...)
		}
		w.close()
		m := mfgr.intIn(1, 5)
		w.labelled("Manufacturer#", int64(m))
		w.labelled("Brand#", int64(m*10+brand.intIn(1, 5)))
		w.str(types.draw(&typ))
		w.int(int64(size.intIn(1, 50)))
		w.str(containers.draw(&container))
		w.money(partPrice(k))
		w.bytes(comment.next(g.pool))
		w.end()
		for _, s := range all {
			s.rowDone()
		}
	}
}

// PartSupplier is the supplier key of a part's i-th supplier (0 to 3) at a
// scale with the given number of suppliers (clause 4.2.3: PS_SUPPKEY).
func PartSupplier(part, i, suppliers int64) int64 {
	return (part+i*(suppliers/suppPerPart+(part-1)/suppliers))%suppliers + 1
}

func (g *Generator) partSupp(w *writer, first, n int64) {
	qty := newStream(1671059989, suppPerPart)
	cost := newStream(1051288424, suppPerPart)
	comment := newText(1961692154, 124, suppPerPart)
	all := []*stream{&qty, &cost, &comment.s}
	for _, s := range all {
		s.skipRows(first)
	}
	suppliers := count(supplierBase, g.sf)
	for k := first + 1; k <= first+n; k++ {
		for i := range int64(suppPerPart) {
			w.row(5)
			w.int(k)
			w.int(PartSupplier(k, i, suppliers))
			w.int(int64(qty.intIn(1, 9999)))
			w.money(int64(cost.intIn(100, 100000)))
			w.bytes(comment.next(g.pool))
			w.end()
		}
		for _, s := range all {
			s.rowDone()
		}
	}
}

// The Better Business Bureau comments: 10 suppliers in 10,000 get "Customer
// ... Complaints" or "Customer ... Recommends" written over their comment
// (clause 4.2.3, S_COMMENT), which Q16 looks for.
const (
	bbbBase      = "Customer "
	bbbComplaint = "Complaints"
	bbbRecommend = "Recommends"
	bbbLength    = len(bbbBase) + len(bbbComplaint)
)

func (g *Generator) supplier(w *writer, first, n int64) {
	address := newAlnum(706178559, 25)
	nation := newStream(110356601, 1)
	ph := phone{newStream(884434366, 3)}
	balance := newStream(962338209, 1)
	comment := newText(1341315363, 63, 1)
	bbb := newStream(202794285, 1)
	junk := newStream(263032577, 1)
	offset := newStream(715851524, 1)
	kind := newStream(753643799, 1)
	all := []*stream{&address.s, &nation, &ph.s, &balance, &comment.s, &bbb, &junk, &offset, &kind}
	for _, s := range all {
		s.skipRows(first)
	}
	var scratch []byte
	for k := first + 1; k <= first+n; k++ {
		text := comment.next(g.pool)
		if bbb.intIn(1, supplierBase) <= 10 {
			scratch = append(scratch[:0], text...)
			noise := int(junk.intIn(0, int32(len(text)-bbbLength)))
			at := int(offset.intIn(0, int32(len(text)-bbbLength-noise)))
			word := bbbRecommend
			if kind.intIn(0, 100) < 50 {
				word = bbbComplaint
			}
			copy(scratch[at:], bbbBase)
			copy(scratch[at+len(bbbBase)+noise:], word)
			text = scratch
		}
		nk := int64(nation.intIn(0, NationCount-1))
		w.row(7)
		w.int(k)
		w.padded("Supplier#", k)
		address.write(w)
		w.int(nk)
		ph.write(w, nk)
		w.money(int64(balance.intIn(-99999, 999999)))
		w.bytes(text)
		w.end()
		for _, s := range all {
			s.rowDone()
		}
	}
}

func (g *Generator) customer(w *writer, first, n int64) {
	address := newAlnum(881155353, 25)
	nation := newStream(1489529863, 1)
	ph := phone{newStream(1521138112, 3)}
	balance := newStream(298370230, 1)
	segment := newStream(1140279430, 1)
	comment := newText(1335826707, 73, 1)
	all := []*stream{&address.s, &nation, &ph.s, &balance, &segment, &comment.s}
	for _, s := range all {
		s.skipRows(first)
	}
	for k := first + 1; k <= first+n; k++ {
		nk := int64(nation.intIn(0, NationCount-1))
		w.row(8)
		w.int(k)
		w.padded("Customer#", k)
		address.write(w)
		w.int(nk)
		ph.write(w, nk)
		w.money(int64(balance.intIn(-99999, 999999)))
		w.str(segments.draw(&segment))
		w.bytes(comment.next(g.pool))
		w.end()
		for _, s := range all {
			s.rowDone()
		}
	}
}

// Scale is the generator's scale factor.
func (g *Generator) Scale() float64 { return g.sf }
