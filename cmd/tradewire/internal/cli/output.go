package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Output formats of the read commands (--output). "tradewire api" ignores
// the flag: it prints the venue's body as received.
const (
	flagOutput    = "output"
	outputTable   = "table"
	outputJSON    = "json"
	outputCSV     = "csv"
	outputFormats = outputTable + "|" + outputJSON + "|" + outputCSV
)

// addOutputFlag registers --output (-o) on root. Its default is empty:
// table when stdout is a terminal, json otherwise (a pipe or a file).
func (a *app) addOutputFlag(root *cobra.Command) {
	root.PersistentFlags().StringP(flagOutput, "o", "",
		"output of the read commands: "+outputFormats+" (default table on a terminal, json otherwise); the table rounds money to the pair's quote increment, json and csv print every digit; api always prints the venue's body")
}

// outputFormat resolves --output, before anything is sent: an unknown
// format is a usage error (exit 2).
func (a *app) outputFormat() (string, error) {
	f := a.root.PersistentFlags().Lookup(flagOutput)
	if f != nil && f.Changed {
		switch v := strings.ToLower(strings.TrimSpace(f.Value.String())); v {
		case outputTable, outputJSON, outputCSV:
			return v, nil
		default:
			return "", usagef("--%s %q: want one of %s", flagOutput, f.Value.String(), strings.ReplaceAll(outputFormats, "|", ", "))
		}
	}
	if isTerminal(a.opts.Stdout) {
		return outputTable, nil
	}
	return outputJSON, nil
}

// isTerminal reports whether w is an *os.File on a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// report is what a read command prints, ready for each output format.
// Field names are snake_case and the same in JSON keys, CSV headers and
// table labels. In JSON (brokerjson.go) and CSV decimals are exact
// decimal text, never floats; the table rounds money to the pair's quote
// increment (money.go).
type report struct {
	// json is marshalled as is for --output json: an object, or an array
	// for a listing.
	json any
	// banner lines open the table output, such as ESTIMATE or PARTIAL.
	// JSON and CSV carry the same facts as fields of their own.
	banner []string
	// fields are the table output's label/value lines, before tables.
	fields [][2]string
	// tables follow the fields in the table output.
	tables []table
	// csv is the one table --output csv prints, header row first.
	csv table
}

// table is a titled grid. Its header holds snake_case names; the table
// output upper-cases them.
type table struct {
	title  string
	header []string
	rows   [][]string
}

// listReport is the report of a listing: one table for both table and CSV
// output, and items (a slice, never nil) for JSON.
func listReport(items any, t table) *report {
	return &report{json: items, tables: []table{t}, csv: t}
}

// write renders r on w in format, in one write so that a failure leaves
// nothing half printed by this function.
func (r *report) write(w io.Writer, format string) error {
	var buf bytes.Buffer
	switch format {
	case outputJSON:
		b, err := json.MarshalIndent(jsonShape(r.json), "", "  ")
		if err != nil {
			return fmt.Errorf("rendering JSON: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	case outputCSV:
		cw := csv.NewWriter(&buf)
		if err := cw.Write(r.csv.header); err != nil {
			return fmt.Errorf("rendering CSV: %w", err)
		}
		if err := cw.WriteAll(r.csv.rows); err != nil {
			return fmt.Errorf("rendering CSV: %w", err)
		}
	default:
		r.writeTable(&buf)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	return nil
}

func (r *report) writeTable(buf *bytes.Buffer) {
	for _, line := range r.banner {
		fmt.Fprintln(buf, printable(line))
	}
	if len(r.fields) > 0 {
		tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
		for _, kv := range r.fields {
			v := kv[1]
			if v == "" {
				v = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\n", printable(kv[0]), printable(v))
		}
		tw.Flush()
	}
	for i, t := range r.tables {
		if i > 0 || len(r.fields) > 0 || len(r.banner) > 0 {
			buf.WriteByte('\n')
		}
		if t.title != "" {
			fmt.Fprintln(buf, printable(t.title))
		}
		tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
		cells := make([]string, len(t.header))
		for j, h := range t.header {
			cells[j] = strings.ToUpper(h)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
		for _, row := range t.rows {
			cells = cells[:0]
			for _, c := range row {
				if c == "" {
					c = "-"
				}
				cells = append(cells, printable(c))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		tw.Flush()
	}
}

// printable folds control characters (a tab would break the columns, an
// escape sequence could drive the terminal) to spaces: text from the
// venue reaches a terminal only through here.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
}

// dec renders a decimal exactly: every digit of its value, never float
// formatting and never an exponent.
func dec(d decimal.Decimal) string { return d.String() }

// decOrEmpty renders an optional decimal, empty when it is not Valid.
func decOrEmpty(n decimal.NullDecimal) string {
	if !n.Valid {
		return ""
	}
	return dec(n.Decimal)
}

// givenOrEmpty is a request value for a cell: empty when zero (not given).
func givenOrEmpty(d decimal.Decimal) string {
	if d.IsZero() {
		return ""
	}
	return dec(d)
}

// stamp renders a time in UTC, RFC 3339 with as many fractional digits as
// it has; empty for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// yesNo renders a bool for a cell.
func yesNo(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
