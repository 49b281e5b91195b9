# Homebrew formula for oyster. This repository is its own tap (Homebrew only installs formulae
# from a tap, so `brew install path/to/oyster.rb` is refused):
#   brew tap oysterun/oyster https://github.com/oysterun/oyster
#   brew install --HEAD oyster      (until the first release; then `brew install oyster`)
# There is no release yet, so the formula is head-only: a `url` naming a release that does not
# exist, or a `sha256` of another commit, would make `brew install oyster` fail. For a release,
# tag the commit `vX.Y.Z` (Cargo.toml's version) and run `make release-formula`: it archives
# that tag as `make dist` does and writes `url` and `sha256` below `license` from that archive;
# upload dist/oyster-X.Y.Z.tar.gz to the vX.Y.Z GitHub release, then commit the formula
# (the steps: README, "Cutting a release").
class Oyster < Formula
  desc "Install, restart and verify the Oysterun Host LaunchAgent"
  homepage "https://github.com/oysterun/oyster"
  license "MIT"
  head "https://github.com/oysterun/oyster.git", branch: "main"

  livecheck do
    url :homepage
    strategy :github_latest
  end

  depends_on "rust" => :build
  # The Host runs on Node 20 or later; oyster pins a Node and finds Homebrew's in its bin.
  depends_on "node"

  # oyster does not ship Oysterun: the Host comes from `npm install -g oysterun` or the user's
  # own checkout (`--root`). Nothing is installed to share/ pretending to be an Oysterun root;
  # oyster only uses <prefix>/share/oysterun if a packager really puts Oysterun there.
  def install
    system "cargo", "install", *std_cargo_args
    generate_completions_from_executable(bin/"oyster", "completions")
    # oyster(1) and one page per subcommand (oyster-agent(1), …).
    system bin/"oyster", "man", "--dir", man1
  end

  # No `service do` block, on purpose: `brew services` would write a second plist,
  # ~/Library/LaunchAgents/homebrew.mxcl.oyster.plist, and start a second Host on the same
  # port beside the com.oysterun.host agent that oyster installs, regenerates and verifies.
  # post_install runs sandboxed and cannot write ~/Library/LaunchAgents either, so the user
  # sets the agent up themselves, as the caveats say.
  def caveats
    <<~EOS
      oyster does not include Oysterun. Install it (npm install -g oysterun), then set up
      the Oysterun Host LaunchAgent as yourself (not with sudo):
        oyster setup --root <your Oysterun install>
      oyster also looks for the oysterun package in the pinned Node's global modules.
      After upgrading oyster, Oysterun, Node or a provider, refresh the agent with:
        oyster agent regenerate
      Check everything with:
        oyster doctor
      Before `brew uninstall oyster`, remove every stack's LaunchAgent (config and logs stay):
        oyster agent uninstall --all
      (otherwise launchd keeps starting a program that is gone, and the job fails with exit 78).
    EOS
  end

  test do
    output = shell_output("#{bin}/oyster --version")
    assert_match(/^oyster \d+\.\d+\.\d+/, output)
    assert_match version.to_s, output unless version.head?

    # A stub Oysterun root: agent print only needs host-service/server.mjs to exist.
    root = testpath/"oysterun"
    (root/"host-service").mkpath
    (root/"host-service/server.mjs").write "// stand-in Host for the formula test\n"
    node = Formula["node"].opt_bin/"node"
    plist = shell_output("#{bin}/oyster agent print --root #{root} --node-bin #{node}")
    assert_match "<string>com.oysterun.host</string>", plist
    assert_match "<string>#{root}/host-service</string>", plist
    assert_match "<string>#{node}</string>", plist
  end
end
