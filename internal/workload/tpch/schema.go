package tpch

import (
	"fmt"

	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
)

// The tables with the specification's column types (clause 1.4.1):
// identifiers as integer (bigint for order keys, which are sparse and pass
// 2^31 past SF 500), fixed text as char, variable text as varchar, decimals
// as numeric(15,2), dates as date.
var tableDDL = map[dbgen.Table]string{
	dbgen.Part: `create table part (
	p_partkey integer not null, p_name varchar(55) not null, p_mfgr char(25) not null,
	p_brand char(10) not null, p_type varchar(25) not null, p_size integer not null,
	p_container char(10) not null, p_retailprice numeric(15,2) not null, p_comment varchar(23) not null)`,
	dbgen.Supplier: `create table supplier (
	s_suppkey integer not null, s_name char(25) not null, s_address varchar(40) not null,
	s_nationkey integer not null, s_phone char(15) not null, s_acctbal numeric(15,2) not null,
	s_comment varchar(101) not null)`,
	dbgen.PartSupp: `create table partsupp (
	ps_partkey integer not null, ps_suppkey integer not null, ps_availqty integer not null,
	ps_supplycost numeric(15,2) not null, ps_comment varchar(199) not null)`,
	dbgen.Customer: `create table customer (
	c_custkey integer not null, c_name varchar(25) not null, c_address varchar(40) not null,
	c_nationkey integer not null, c_phone char(15) not null, c_acctbal numeric(15,2) not null,
	c_mktsegment char(10) not null, c_comment varchar(117) not null)`,
	dbgen.Orders: `create table orders (
	o_orderkey bigint not null, o_custkey integer not null, o_orderstatus char(1) not null,
	o_totalprice numeric(15,2) not null, o_orderdate date not null, o_orderpriority char(15) not null,
	o_clerk char(15) not null, o_shippriority integer not null, o_comment varchar(79) not null)`,
	dbgen.Lineitem: `create table lineitem (
	l_orderkey bigint not null, l_partkey integer not null, l_suppkey integer not null,
	l_linenumber integer not null, l_quantity numeric(15,2) not null, l_extendedprice numeric(15,2) not null,
	l_discount numeric(15,2) not null, l_tax numeric(15,2) not null, l_returnflag char(1) not null,
	l_linestatus char(1) not null, l_shipdate date not null, l_commitdate date not null,
	l_receiptdate date not null, l_shipinstruct char(25) not null, l_shipmode char(10) not null,
	l_comment varchar(44) not null)`,
	dbgen.Nation: `create table nation (
	n_nationkey integer not null, n_name char(25) not null, n_regionkey integer not null,
	n_comment varchar(152) not null)`,
	dbgen.Region: `create table region (
	r_regionkey integer not null, r_name char(25) not null, r_comment varchar(152) not null)`,
}

// keyDDL are the primary keys and the usual indexes (on the foreign keys
// and the date columns the queries restrict, which clause 1.5.7 allows),
// built after the data, biggest first.
var keyDDL = []string{
	"alter table lineitem add constraint lineitem_pkey primary key (l_orderkey, l_linenumber)",
	"create index lineitem_part_supp on lineitem (l_partkey, l_suppkey)",
	"alter table orders add constraint orders_pkey primary key (o_orderkey)",
	"create index orders_custkey on orders (o_custkey)",
	"create index orders_orderdate on orders (o_orderdate)",
	"alter table partsupp add constraint partsupp_pkey primary key (ps_partkey, ps_suppkey)",
	"create index partsupp_suppkey on partsupp (ps_suppkey)",
	"alter table part add constraint part_pkey primary key (p_partkey)",
	"alter table customer add constraint customer_pkey primary key (c_custkey)",
	"create index customer_nationkey on customer (c_nationkey)",
	"alter table supplier add constraint supplier_pkey primary key (s_suppkey)",
	"create index supplier_nationkey on supplier (s_nationkey)",
	"alter table nation add constraint nation_pkey primary key (n_nationkey)",
	"alter table region add constraint region_pkey primary key (r_regionkey)",
}

// foreignKeyDDL are the foreign keys of clause 1.4.2, added with
// --foreign-keys (PostgreSQL checks each one with a join over the table).
var foreignKeyDDL = []string{
	"alter table nation add constraint nation_region_fk foreign key (n_regionkey) references region",
	"alter table supplier add constraint supplier_nation_fk foreign key (s_nationkey) references nation",
	"alter table customer add constraint customer_nation_fk foreign key (c_nationkey) references nation",
	"alter table partsupp add constraint partsupp_part_fk foreign key (ps_partkey) references part",
	"alter table partsupp add constraint partsupp_supplier_fk foreign key (ps_suppkey) references supplier",
	"alter table orders add constraint orders_customer_fk foreign key (o_custkey) references customer",
	"alter table lineitem add constraint lineitem_orders_fk foreign key (l_orderkey) references orders",
	"alter table lineitem add constraint lineitem_partsupp_fk foreign key (l_partkey, l_suppkey) references partsupp",
}

// MetaTable records what was loaded and how far: a load is usable only
// when its status is complete. The refresh functions keep the row counts
// of orders and lineitem, and advance next_update (RF1's next insert set)
// and next_delete (RF2's next delete set), so that every run uses new
// update sets and the data stays consistent across runs.
const MetaTable = "tpch_meta"

const metaDDL = `create table ` + MetaTable + ` (
	scale double precision not null,
	foreign_keys boolean not null,
	status text not null,
	tables_done text[] not null default '{}',
	orders_rows bigint not null default 0,
	lineitem_rows bigint not null default 0,
	next_update integer not null default 1,
	next_delete integer not null default 1,
	generator text not null,
	loaded_at timestamptz)`

// Load states.
const (
	statusLoading  = "loading"
	statusComplete = "complete"
)

// dropDDL drops every table of the workload.
func dropDDL() string {
	s := "drop table if exists " + MetaTable
	for _, t := range dbgen.Tables() {
		s += ", " + t.String()
	}
	return s + " cascade"
}

// copySQL is the COPY of table t from the generator's format.
func copySQL(t dbgen.Table, freeze bool) string {
	opt := ""
	if freeze {
		opt = ", freeze"
	}
	return fmt.Sprintf("copy %s from stdin with (format text, delimiter '|'%s)", t, opt)
}

// copyBinarySQL is the COPY of table t from the generator's binary rows.
func copyBinarySQL(t dbgen.Table, freeze bool) string {
	return fmt.Sprintf("copy %s from stdin with (format binary, freeze %v)", t, freeze)
}
