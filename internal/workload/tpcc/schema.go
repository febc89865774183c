package tpcc

// The schema: the nine tables with exact numeric money types (money is never
// a float: consistency conditions compare sums exactly), primary keys and the
// secondary indexes the transactions need. Column order is the COPY order.

// Tables in load order.
var Tables = []string{"warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock"}

// MetaTable records what tunebench loaded: warehouses, the load constants
// and the load status, so runs can refuse a half-loaded database.
const MetaTable = "tunebench_tpcc_meta"

// ProgressTable records which warehouses are loaded (resume).
const ProgressTable = "tunebench_tpcc_load_progress"

// Load statuses in the meta table.
const (
	StatusLoading  = "loading"  // data being copied; ProgressTable says which warehouses are done
	StatusIndexing = "indexing" // data complete; keys and indexes being built
	StatusComplete = "complete" // ready to run
)

// tableDDL is the CREATE TABLE text per table, without storage options.
var tableDDL = map[string]string{
	"warehouse": `create table warehouse (
    w_id       int not null,
    w_name     varchar(10),
    w_street_1 varchar(20),
    w_street_2 varchar(20),
    w_city     varchar(20),
    w_state    char(2),
    w_zip      char(9),
    w_tax      numeric(4,4),
    w_ytd      numeric(12,2)
)`,
	"district": `create table district (
    d_id        int not null,
    d_w_id      int not null,
    d_name      varchar(10),
    d_street_1  varchar(20),
    d_street_2  varchar(20),
    d_city      varchar(20),
    d_state     char(2),
    d_zip       char(9),
    d_tax       numeric(4,4),
    d_ytd       numeric(12,2),
    d_next_o_id int
)`,
	"customer": `create table customer (
    c_id           int not null,
    c_d_id         int not null,
    c_w_id         int not null,
    c_first        varchar(16),
    c_middle       char(2),
    c_last         varchar(16),
    c_street_1     varchar(20),
    c_street_2     varchar(20),
    c_city         varchar(20),
    c_state        char(2),
    c_zip          char(9),
    c_phone        char(16),
    c_since        timestamp,
    c_credit       char(2),
    c_credit_lim   numeric(12,2),
    c_discount     numeric(4,4),
    c_balance      numeric(12,2),
    c_ytd_payment  numeric(12,2),
    c_payment_cnt  int,
    c_delivery_cnt int,
    c_data         varchar(500)
)`,
	"history": `create table history (
    h_c_id   int,
    h_c_d_id int,
    h_c_w_id int,
    h_d_id   int,
    h_w_id   int,
    h_date   timestamp,
    h_amount numeric(6,2),
    h_data   varchar(24)
)`,
	"new_order": `create table new_order (
    no_o_id int not null,
    no_d_id int not null,
    no_w_id int not null
)`,
	"orders": `create table orders (
    o_id         int not null,
    o_d_id       int not null,
    o_w_id       int not null,
    o_c_id       int,
    o_entry_d    timestamp,
    o_carrier_id int,
    o_ol_cnt     int,
    o_all_local  int
)`,
	"order_line": `create table order_line (
    ol_o_id        int not null,
    ol_d_id        int not null,
    ol_w_id        int not null,
    ol_number      int not null,
    ol_i_id        int,
    ol_supply_w_id int,
    ol_delivery_d  timestamp,
    ol_quantity    int,
    ol_amount      numeric(6,2),
    ol_dist_info   char(24)
)`,
	"item": `create table item (
    i_id    int not null,
    i_im_id int,
    i_name  varchar(24),
    i_price numeric(5,2),
    i_data  varchar(50)
)`,
	"stock": `create table stock (
    s_i_id       int not null,
    s_w_id       int not null,
    s_quantity   int,
    s_dist_01    char(24),
    s_dist_02    char(24),
    s_dist_03    char(24),
    s_dist_04    char(24),
    s_dist_05    char(24),
    s_dist_06    char(24),
    s_dist_07    char(24),
    s_dist_08    char(24),
    s_dist_09    char(24),
    s_dist_10    char(24),
    s_ytd        int,
    s_order_cnt  int,
    s_remote_cnt int,
    s_data       varchar(50)
)`,
}

// Keys are the primary keys and secondary indexes, built after the data.
// customer_name serves the by-last-name lookups of Payment and Order-Status
// (ordered by c_first for the middle-row rule); orders_customer serves
// Order-Status's "last order of the customer".
var Keys = []string{
	"alter table warehouse add constraint warehouse_pkey primary key (w_id)",
	"alter table district add constraint district_pkey primary key (d_w_id, d_id)",
	"alter table customer add constraint customer_pkey primary key (c_w_id, c_d_id, c_id)",
	"create index customer_name on customer (c_w_id, c_d_id, c_last, c_first)",
	"alter table new_order add constraint new_order_pkey primary key (no_w_id, no_d_id, no_o_id)",
	"alter table orders add constraint orders_pkey primary key (o_w_id, o_d_id, o_id)",
	"create unique index orders_customer on orders (o_w_id, o_d_id, o_c_id, o_id)",
	"alter table order_line add constraint order_line_pkey primary key (ol_w_id, ol_d_id, ol_o_id, ol_number)",
	"alter table item add constraint item_pkey primary key (i_id)",
	"alter table stock add constraint stock_pkey primary key (s_w_id, s_i_id)",
}

// TableDDL returns the CREATE TABLE statement for table.
func TableDDL(table string) string { return tableDDL[table] }
