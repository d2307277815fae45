"""Static files in production: compressed, with hashed names (whitenoise), and the
live pages' ES modules importing each other by their hashed names too."""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticStorage(CompressedManifestStaticFilesStorage):
    # Rewrites `import ... from "./dom.js"` inside the modules to the hashed file, so a
    # deploy never mixes a cached old module with a new one.
    support_js_module_import_aggregation = True
