package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// completionShells are the shells "tradewire completion" writes a script
// for, with cobra's generators.
var completionShells = []string{"bash", "zsh", "fish"}

// newCompletionCmd is "tradewire completion bash|zsh|fish". It replaces
// cobra's default completion command (turned off in newRoot) so that its
// arguments are checked like every other command's: an unknown shell is a
// usage error, exit 2.
func newCompletionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Print the completion script for bash, zsh or fish on stdout.

  bash: source <(tradewire completion bash)
        (needs the bash-completion package; to keep it, write it to
        /etc/bash_completion.d/tradewire or ~/.local/share/bash-completion/completions/tradewire)
  zsh:  tradewire completion zsh > "${fpath[1]}/_tradewire"   (then start a new shell)
  fish: tradewire completion fish > ~/.config/fish/completions/tradewire.fish`,
		ValidArgs: completionShells,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("completion: want one shell (bash, zsh or fish), got %d argument(s)", len(args))
			}
			for _, s := range completionShells {
				if args[0] == s {
					return nil
				}
			}
			return usagef("completion: unknown shell; want bash, zsh or fish")
		},
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			root, w := cmd.Root(), a.opts.Stdout
			var err error
			switch args[0] {
			case "bash":
				err = root.GenBashCompletionV2(w, true)
			case "zsh":
				err = root.GenZshCompletion(w)
			case "fish":
				err = root.GenFishCompletion(w, true)
			}
			if err != nil {
				return fmt.Errorf("completion: writing the script: %w", err)
			}
			return nil
		}),
	}
}
