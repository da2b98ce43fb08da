"""Small facts every layer uses: errors, units and formatting, paths to the bundled
data, the package version."""
