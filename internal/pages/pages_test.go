package pages

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// book serves pages by target; Target accepts links starting with "/".
type book map[string]string

func (b book) Get(_ context.Context, target string) ([]byte, error) {
	body, ok := b[target]
	if !ok {
		return nil, errors.New("no such page " + target)
	}
	return []byte(body), nil
}

func (b book) Target(link string) (string, error) {
	if !strings.HasPrefix(link, "/") {
		return "", errors.New("foreign link")
	}
	return link, nil
}

func TestWalk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		pages book
		cap   int
		rows  int
		check func(error) bool
	}{
		{"one page", book{"/1": `{"next":null,"results":[1,2]}`}, 5, 2, func(err error) bool { return err == nil }},
		{"two pages, short last", book{"/1": `{"next":"/2","results":[1,2]}`, "/2": `{"next":"","results":[3]}`}, 5, 3,
			func(err error) bool { return err == nil }},
		{"last page as full, no next", book{"/1": `{"next":"/2","results":[1,2]}`, "/2": `{"next":null,"results":[3,4]}`}, 5, 4,
			func(err error) bool { return errors.Is(err, ErrVanished) }},
		{"self-loop", book{"/1": `{"next":"/1","results":[1]}`}, 5, 1, func(err error) bool { return errors.Is(err, ErrRepeated) }},
		{"longer loop", book{"/1": `{"next":"/2","results":[1]}`, "/2": `{"next":"/3","results":[2]}`, "/3": `{"next":"/2","results":[3]}`}, 50, 3,
			func(err error) bool { return errors.Is(err, ErrRepeated) }},
		{"cap", book{"/1": `{"next":"/2","results":[1]}`, "/2": `{"next":"/3","results":[2]}`}, 2, 2,
			func(err error) bool { var ce *CapError; return errors.As(err, &ce) && ce.Pages == 2 }},
		{"foreign link", book{"/1": `{"next":"https://evil.example/2","results":[1]}`}, 5, 1,
			func(err error) bool { var le *LinkError; return errors.As(err, &le) && le.Page == 1 }},
		{"not a page", book{"/1": `[1]`}, 5, 0, func(err error) bool { var de *DecodeError; return errors.As(err, &de) }},
		// previous links are never followed: /2's leads back to /1 (a
		// repeat, were it followed), /1's to a page that is not there, /3's
		// to another host.
		{"previous links", book{"/1": `{"next":"/2","previous":"/0","results":[1,2]}`,
			"/2": `{"next":"/3","previous":"/1","results":[3,4]}`,
			"/3": `{"next":null,"previous":"https://evil.example/2","results":[5]}`}, 5, 5,
			func(err error) bool { return err == nil }},
		{"previous link, no next", book{"/1": `{"next":null,"previous":"/1","results":[1]}`}, 5, 1,
			func(err error) bool { return err == nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows := 0
			err := Walk(context.Background(), tt.pages, func(b []byte) []byte { return b }, "/1", tt.cap, func(_ int, _ string, r []json.RawMessage) (bool, error) {
				rows += len(r)
				return true, nil
			})
			if !tt.check(err) || rows != tt.rows {
				t.Errorf("Walk = %v after %d rows; want %d rows", err, rows, tt.rows)
			}
		})
	}
}
