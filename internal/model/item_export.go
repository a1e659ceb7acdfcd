package model

// An items export is NDJSON, as the session and agent exports are: a header
// line naming the format and its version, one line per item (with the
// embeddings of its texts, bit for bit), and an items_end line with the count
// and the SHA-256 of every byte before it. It holds one space's items under a
// namespace prefix, or, for a key not bound to a user, every space's
// (all_users): each line says whose item it is. Expired items are left out,
// as reads leave them out.
const (
	LineItemsHeader = "header"
	LineItem        = "item"
	LineItemsEnd    = "items_end"
)

// ItemsExportFormat and ItemsExportVersion are what an items export's header
// says; an import refuses any other.
const (
	ItemsExportFormat  = "logbook.items"
	ItemsExportVersion = 1
)

// ExportItem is an item as an export carries it.
type ExportItem struct {
	Namespace  []string           `json:"namespace"`
	Key        string             `json:"key"`
	UserID     *string            `json:"user_id"`
	Value      Object             `json:"value"`
	Version    int64              `json:"version"`
	Index      []string           `json:"index"`
	CreatedAt  Time               `json:"created_at"`
	UpdatedAt  Time               `json:"updated_at"`
	ExpiresAt  *Time              `json:"expires_at"`
	TTLSeconds *int64             `json:"ttl_seconds"`
	Vectors    []ExportItemVector `json:"vectors,omitempty"`
}

// ExportItemVector is one embedded text of an item: an import keeps it when
// the item's value still gives that text at that field, and has the worker
// embed the others.
type ExportItemVector struct {
	Field     string    `json:"field"`
	Text      string    `json:"text"`
	Model     string    `json:"model"`
	Embedding []float32 `json:"embedding"`
}

// ItemsExportLine is one line of an items export.
type ItemsExportLine struct {
	Type    string             `json:"type"`
	Format  string             `json:"format,omitempty"`
	Version int                `json:"version,omitempty"`
	Item    *ExportItem        `json:"item,omitempty"`
	Counts  *ItemsExportCounts `json:"counts,omitempty"`
	SHA256  string             `json:"sha256,omitempty"`
}

// ItemsExportCounts is what the items_end line says the export holds.
type ItemsExportCounts struct {
	Items int64 `json:"items"`
}

// ItemExportFilter picks the items an export holds.
type ItemExportFilter struct {
	UserID   string // the space ("": the shared one), unless AllUsers
	AllUsers bool
	Prefix   []string
}

// ItemImportOptions says how an import meets the items the tenant has:
// Replace overwrites an item of the same space, namespace and key (else it
// is a conflict). ServerEmbeds is PutItem's.
type ItemImportOptions struct {
	Replace      bool
	ServerEmbeds bool
}

// ItemsImportResult is the answer of POST /v1/items/import.
type ItemsImportResult struct {
	Items int64 `json:"items"`
}
