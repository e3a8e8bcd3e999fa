// Command apicount counts the exported identifiers of a tradewire tree,
// per package: what a user of the module can name. It counts exported
// types, functions, variables and constants, and the exported methods of
// exported types (struct fields are not counted), in every non-test Go
// file outside internal/ and cmd/ directories.
//
//	go run ./internal/apicount [-v] [DIR]
//
// DIR is the module's root (default "."), so an older revision can be
// counted from a worktree of it. With -v each identifier is listed.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "list every identifier")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	counts, names, err := count(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(1)
	}
	pkgs := make([]string, 0, len(counts))
	for p := range counts {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	total := 0
	for _, p := range pkgs {
		fmt.Printf("%-24s %4d\n", p, counts[p])
		total += counts[p]
		if *verbose {
			for _, n := range names[p] {
				fmt.Printf("    %s\n", n)
			}
		}
	}
	fmt.Printf("%-24s %4d\n", "total", total)
}

// count walks root and returns, per package directory, the number of
// exported identifiers and their names.
func count(root string) (map[string]int, map[string][]string, error) {
	counts := map[string]int{}
	names := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (base == "internal" || base == "cmd" || base == "testdata" || strings.HasPrefix(base, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		add := func(n string) {
			counts[pkg]++
			names[pkg] = append(names[pkg], n)
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if !decl.Name.IsExported() {
					continue
				}
				if decl.Recv == nil {
					add(decl.Name.Name)
					continue
				}
				if recv := receiver(decl.Recv.List[0].Type); ast.IsExported(recv) {
					add(recv + "." + decl.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						if spec.Name.IsExported() {
							add(spec.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							if n.IsExported() {
								add(n.Name)
							}
						}
					}
				}
			}
		}
		return nil
	})
	return counts, names, err
}

// receiver names a method's receiver type: T for T, *T, T[P] and *T[P].
func receiver(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch t := e.(type) {
	case *ast.IndexExpr:
		e = t.X
	case *ast.IndexListExpr:
		e = t.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
