# Homebrew formula for oyster. Build from source with cargo, as current Rust formulae do.
# Releases: set `url` to the release tarball and `sha256` to its checksum
# (`shasum -a 256 oyster-X.Y.Z.tar.gz`); until then `brew install --HEAD` builds main.
class Oyster < Formula
  desc "Install, restart and verify the Oysterun Host LaunchAgent"
  homepage "https://github.com/oysterun/oyster"
  license "MIT"
  head "https://github.com/oysterun/oyster.git", branch: "main"

  depends_on "rust" => :build
  depends_on "node"

  def install
    system "cargo", "install", *std_cargo_args
    generate_completions_from_executable(bin/"oyster", "completions")
    (man1/"oyster.1").write Utils.safe_popen_read(bin/"oyster", "man")
  end

  # post_install runs sandboxed and cannot write the user's ~/Library/LaunchAgents, so the
  # user installs (and after upgrades regenerates) the agent themselves.
  def caveats
    <<~EOS
      To install the Oysterun Host as a LaunchAgent (started at login) run:
        oyster agent install
      After upgrading Oysterun, Node or a provider, refresh it with:
        oyster agent regenerate
      Check everything with:
        oyster doctor
    EOS
  end

  test do
    ENV["HOME"] = testpath
    (testpath/"root/host-service").mkpath
    (testpath/"root/host-service/server.mjs").write "// stand-in Host for the formula test\n"
    node = Formula["node"].opt_bin/"node"
    plist = shell_output("#{bin}/oyster agent print --root #{testpath}/root --node-bin #{node}")
    assert_match "<key>Label</key>", plist
    assert_match "<string>com.oysterun.host</string>", plist
    assert_match "#{testpath}/root/host-service/server.mjs", plist
    json = shell_output("#{bin}/oyster providers resolve --json")
    assert_match '"providers"', json
    assert_match "oyster", shell_output("#{bin}/oyster --version")
  end
end
