package tpch

import (
	"strings"

	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
)

// The schema on MariaDB (InnoDB): the column types of schema.go in
// MariaDB's names (decimal(15,2), date, char, varchar), each table with
// its primary key. An InnoDB table is its primary key's index: rows
// loaded in key order go in at its end, where adding the key afterwards
// would copy the whole table. The text columns are latin1 with a binary
// collation, as PostgreSQL's C collation compares: LIKE is case-sensitive
// (Q16's '%Customer%Complaints%' must not match a comment's "customer"),
// and ORDER BY sorts bytes.

// DialectMariaDB is the dialect name of MariaDB targets.
const DialectMariaDB = "mariadb"

// mariaTableOptions: STATS_AUTO_RECALC=0 while the data goes in; InnoDB
// otherwise recomputes the statistics of a growing table in the
// background each time a tenth of its rows changed, which doubled the
// server's CPU time of lineitem's load at SF 0.1 (10.7 s against 5.1 s).
// The load's ANALYZE TABLE computes them after the data, and the table
// takes the server's setting again (mariaAutoRecalc).
const mariaTableOptions = " ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_bin STATS_AUTO_RECALC=0"

// mariaAutoRecalc gives table t the server's innodb_stats_auto_recalc
// again (a change of its metadata alone).
func mariaAutoRecalc(t dbgen.Table) string {
	return "ALTER TABLE " + t.String() + " STATS_AUTO_RECALC=DEFAULT, ALGORITHM=INSTANT"
}

// mariaTableDDL are the tables' columns and primary keys, closed by
// mariaCreateDDL.
var mariaTableDDL = map[dbgen.Table]string{
	dbgen.Part: `CREATE TABLE IF NOT EXISTS part (
	p_partkey INT NOT NULL, p_name VARCHAR(55) NOT NULL, p_mfgr CHAR(25) NOT NULL,
	p_brand CHAR(10) NOT NULL, p_type VARCHAR(25) NOT NULL, p_size INT NOT NULL,
	p_container CHAR(10) NOT NULL, p_retailprice DECIMAL(15,2) NOT NULL, p_comment VARCHAR(23) NOT NULL,
	PRIMARY KEY (p_partkey)`,
	dbgen.Supplier: `CREATE TABLE IF NOT EXISTS supplier (
	s_suppkey INT NOT NULL, s_name CHAR(25) NOT NULL, s_address VARCHAR(40) NOT NULL,
	s_nationkey INT NOT NULL, s_phone CHAR(15) NOT NULL, s_acctbal DECIMAL(15,2) NOT NULL,
	s_comment VARCHAR(101) NOT NULL,
	PRIMARY KEY (s_suppkey)`,
	dbgen.PartSupp: `CREATE TABLE IF NOT EXISTS partsupp (
	ps_partkey INT NOT NULL, ps_suppkey INT NOT NULL, ps_availqty INT NOT NULL,
	ps_supplycost DECIMAL(15,2) NOT NULL, ps_comment VARCHAR(199) NOT NULL,
	PRIMARY KEY (ps_partkey, ps_suppkey)`,
	dbgen.Customer: `CREATE TABLE IF NOT EXISTS customer (
	c_custkey INT NOT NULL, c_name VARCHAR(25) NOT NULL, c_address VARCHAR(40) NOT NULL,
	c_nationkey INT NOT NULL, c_phone CHAR(15) NOT NULL, c_acctbal DECIMAL(15,2) NOT NULL,
	c_mktsegment CHAR(10) NOT NULL, c_comment VARCHAR(117) NOT NULL,
	PRIMARY KEY (c_custkey)`,
	dbgen.Orders: `CREATE TABLE IF NOT EXISTS orders (
	o_orderkey BIGINT NOT NULL, o_custkey INT NOT NULL, o_orderstatus CHAR(1) NOT NULL,
	o_totalprice DECIMAL(15,2) NOT NULL, o_orderdate DATE NOT NULL, o_orderpriority CHAR(15) NOT NULL,
	o_clerk CHAR(15) NOT NULL, o_shippriority INT NOT NULL, o_comment VARCHAR(79) NOT NULL,
	PRIMARY KEY (o_orderkey)`,
	dbgen.Lineitem: `CREATE TABLE IF NOT EXISTS lineitem (
	l_orderkey BIGINT NOT NULL, l_partkey INT NOT NULL, l_suppkey INT NOT NULL,
	l_linenumber INT NOT NULL, l_quantity DECIMAL(15,2) NOT NULL, l_extendedprice DECIMAL(15,2) NOT NULL,
	l_discount DECIMAL(15,2) NOT NULL, l_tax DECIMAL(15,2) NOT NULL, l_returnflag CHAR(1) NOT NULL,
	l_linestatus CHAR(1) NOT NULL, l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL,
	l_receiptdate DATE NOT NULL, l_shipinstruct CHAR(25) NOT NULL, l_shipmode CHAR(10) NOT NULL,
	l_comment VARCHAR(44) NOT NULL,
	PRIMARY KEY (l_orderkey, l_linenumber)`,
	dbgen.Nation: `CREATE TABLE IF NOT EXISTS nation (
	n_nationkey INT NOT NULL, n_name CHAR(25) NOT NULL, n_regionkey INT NOT NULL,
	n_comment VARCHAR(152) NOT NULL,
	PRIMARY KEY (n_nationkey)`,
	dbgen.Region: `CREATE TABLE IF NOT EXISTS region (
	r_regionkey INT NOT NULL, r_name CHAR(25) NOT NULL, r_comment VARCHAR(152) NOT NULL,
	PRIMARY KEY (r_regionkey)`,
}

// mariaCreateDDL creates table t (if it does not exist), with its
// secondary indexes when withIndexes.
func mariaCreateDDL(t dbgen.Table, withIndexes bool) string {
	s := mariaTableDDL[t]
	if withIndexes {
		for _, ix := range mariaIndexes[t] {
			s += ",\n\t" + strings.TrimPrefix(ix, "ADD ")
		}
	}
	return s + ")" + mariaTableOptions
}

// mariaColumns are each table's columns in the generator's order (LOAD
// DATA names them).
var mariaColumns = map[dbgen.Table][]string{}

func init() {
	for t, ddl := range mariaTableDDL {
		var cols []string
		for _, line := range strings.Split(ddl, "\n")[1:] {
			if strings.HasPrefix(strings.TrimSpace(line), "PRIMARY KEY") {
				continue
			}
			for _, def := range strings.Split(line, ", ") {
				def = strings.TrimSpace(def)
				if def == "" {
					continue
				}
				cols = append(cols, strings.Fields(def)[0])
			}
		}
		mariaColumns[t] = cols
	}
}

// mariaIndexes are the secondary indexes of keyDDL, per table, as
// ALTER TABLE clauses (one ALTER builds a table's indexes in one pass).
var mariaIndexes = map[dbgen.Table][]string{
	dbgen.Lineitem: {"ADD INDEX lineitem_part_supp (l_partkey, l_suppkey)"},
	dbgen.Orders:   {"ADD INDEX orders_custkey (o_custkey)", "ADD INDEX orders_orderdate (o_orderdate)"},
	dbgen.PartSupp: {"ADD INDEX partsupp_suppkey (ps_suppkey)"},
	dbgen.Customer: {"ADD INDEX customer_nationkey (c_nationkey)"},
	dbgen.Supplier: {"ADD INDEX supplier_nationkey (s_nationkey)"},
}

// mariaIndexDDL builds table t's secondary indexes ("" when it has none).
func mariaIndexDDL(t dbgen.Table) string {
	if len(mariaIndexes[t]) == 0 {
		return ""
	}
	return "ALTER TABLE " + t.String() + " " + strings.Join(mariaIndexes[t], ", ")
}

// mariaForeignKeyDDL are the foreign keys of clause 1.4.2 in MariaDB's
// syntax (the referenced columns named). They are added after the data
// with foreign_key_checks off: InnoDB adds a key in place then, without
// checking the rows (with checks on it copies the whole table), and the
// rows are dbgen's, whose keys refer to existing rows.
var mariaForeignKeyDDL = []string{
	"ALTER TABLE nation ADD CONSTRAINT nation_region_fk FOREIGN KEY (n_regionkey) REFERENCES region (r_regionkey)",
	"ALTER TABLE supplier ADD CONSTRAINT supplier_nation_fk FOREIGN KEY (s_nationkey) REFERENCES nation (n_nationkey)",
	"ALTER TABLE customer ADD CONSTRAINT customer_nation_fk FOREIGN KEY (c_nationkey) REFERENCES nation (n_nationkey)",
	"ALTER TABLE partsupp ADD CONSTRAINT partsupp_part_fk FOREIGN KEY (ps_partkey) REFERENCES part (p_partkey)",
	"ALTER TABLE partsupp ADD CONSTRAINT partsupp_supplier_fk FOREIGN KEY (ps_suppkey) REFERENCES supplier (s_suppkey)",
	"ALTER TABLE orders ADD CONSTRAINT orders_customer_fk FOREIGN KEY (o_custkey) REFERENCES customer (c_custkey)",
	"ALTER TABLE lineitem ADD CONSTRAINT lineitem_orders_fk FOREIGN KEY (l_orderkey) REFERENCES orders (o_orderkey)",
	"ALTER TABLE lineitem ADD CONSTRAINT lineitem_partsupp_fk FOREIGN KEY (l_partkey, l_suppkey) REFERENCES partsupp (ps_partkey, ps_suppkey)",
}

// mariaMetaDDL is MetaTable on MariaDB: tables_done is a comma-separated
// list (MariaDB has no arrays).
const mariaMetaDDL = `CREATE TABLE IF NOT EXISTS ` + MetaTable + ` (
	scale DOUBLE NOT NULL,
	foreign_keys BOOLEAN NOT NULL,
	status VARCHAR(16) NOT NULL,
	tables_done VARCHAR(255) NOT NULL DEFAULT '',
	orders_rows BIGINT NOT NULL DEFAULT 0,
	lineitem_rows BIGINT NOT NULL DEFAULT 0,
	next_update INT NOT NULL DEFAULT 1,
	next_delete INT NOT NULL DEFAULT 1,
	generator VARCHAR(64) NOT NULL,
	loaded_at DATETIME(6)) ENGINE=InnoDB`

// mariaDropDDL drops every table of the workload (foreign keys first
// out of the way: DROP TABLE of several tables refuses a referenced one
// otherwise).
func mariaDropDDL() []string {
	s := "DROP TABLE IF EXISTS " + MetaTable
	for _, t := range dbgen.Tables() {
		s += ", " + t.String()
	}
	return []string{"SET SESSION foreign_key_checks = 0", s, "SET SESSION foreign_key_checks = 1"}
}

// mariaAnalyzeDDL gathers the tables' statistics the MariaDB way: the
// engine-independent ones (histograms included), which the optimizer
// uses by default (use_stat_tables), besides InnoDB's.
func mariaAnalyzeDDL(tables ...dbgen.Table) string {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.String()
	}
	return "ANALYZE TABLE " + strings.Join(names, ", ") + " PERSISTENT FOR ALL"
}
