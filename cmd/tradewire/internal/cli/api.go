package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// apiMethods are the methods "tradewire api" sends.
var apiMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

func newAPICmd(a *app) *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "api METHOD PATH [--data JSON|@file|@-]",
		Short: "Send one signed request and print the response body",
		Long: `Send one signed request to the venue and print the response body on stdout,
like "gh api".

METHOD is one of ` + strings.Join(apiMethods, ", ") + ` (lower case is accepted).
PATH is the request-target, such as /api/v2/crypto/trading/accounts/; a query
string is sent and signed exactly as given. A full URL on the base URL's scheme
and host (a pagination "next" link) is accepted too.

--data sends a JSON body byte for byte, never re-serialised: the JSON itself,
@file to read a file, or @- to read stdin.

GETs are retried on 429, 500, 502, 503, 504 and network failures; any other
method is sent exactly once. On a non-2xx answer nothing is printed on stdout
and one line on stderr names the status and the venue's message.`,
		Example: `  tradewire api GET /api/v2/crypto/trading/accounts/
  tradewire api get '/api/v2/crypto/marketdata/best_bid_ask/?symbol=BTC-USD&symbol=ETH-USD'
  tradewire api POST '/api/v2/crypto/trading/orders/?account_number=AB1' --data @order.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("api: want METHOD PATH, got %d argument(s) (see tradewire api --help)", len(args))
			}
			return nil
		},
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			method, err := apiMethod(args[0])
			if err != nil {
				return err
			}
			var body []byte
			if cmd.Flags().Changed("data") {
				if method == "GET" {
					return usagef("api: --data with GET: a GET carries no body")
				}
				if body, err = readData(data, a.opts.Stdin); err != nil {
					return err
				}
			}
			client, err := a.transport()
			if err != nil {
				return err
			}
			target := args[1]
			if !strings.HasPrefix(target, "/") {
				if !strings.Contains(target, "://") {
					return usagef("api: PATH %q must start with / (such as /api/v2/crypto/trading/accounts/)", target)
				}
				if target, err = client.Target(target); err != nil {
					return err
				}
			}
			resp, err := client.Do(cmd.Context(), method, target, body)
			if err != nil {
				return err
			}
			return writeBody(a.opts.Stdout, resp.Body)
		}),
	}
	cmd.Flags().StringVarP(&data, "data", "d", "", "JSON request body: the JSON itself, @file, or @- for stdin; sent byte for byte")
	return cmd
}

// apiMethod upper-cases and checks METHOD.
func apiMethod(arg string) (string, error) {
	m := strings.ToUpper(arg)
	if !slices.Contains(apiMethods, m) {
		return "", usagef("api: METHOD %q: want one of %s", arg, strings.Join(apiMethods, ", "))
	}
	return m, nil
}

// maxDataBytes bounds a --data body read from a file or stdin.
const maxDataBytes = 1 << 20

// readData returns the body --data names, exactly as given, after
// checking that it is JSON: the body is never re-serialised, so a
// mistyped body must be refused before it is sent.
func readData(data string, stdin io.Reader) ([]byte, error) {
	var body []byte
	switch {
	case data == "@-":
		b, err := io.ReadAll(io.LimitReader(stdin, maxDataBytes+1))
		if err != nil {
			return nil, usagef("--data @-: reading stdin: %v", err)
		}
		body = b
	case strings.HasPrefix(data, "@"):
		path := data[1:]
		f, err := os.Open(path)
		if err != nil {
			return nil, usagef("--data @%s: cannot read the file: %v", path, unwrapPathError(err))
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxDataBytes+1))
		if err != nil {
			return nil, usagef("--data @%s: cannot read the file: %v", path, unwrapPathError(err))
		}
		body = b
	default:
		body = []byte(data)
	}
	if len(body) > maxDataBytes {
		return nil, usagef("--data: body exceeds %d bytes", maxDataBytes)
	}
	if !json.Valid(body) {
		return nil, usagef("--data: not valid JSON (the body is sent byte for byte, so it must be JSON as given)")
	}
	return body, nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// writeBody prints a response body as received, ending it with a newline
// when it lacks one.
func writeBody(w io.Writer, body []byte) error {
	if len(body) == 0 {
		return nil
	}
	if _, err := w.Write(body); err != nil {
		return fmt.Errorf("writing the response: %w", err)
	}
	if !bytes.HasSuffix(body, []byte("\n")) {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return fmt.Errorf("writing the response: %w", err)
		}
	}
	return nil
}
