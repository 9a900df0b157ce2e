"""``python -m eventbus``: the CLI, without the working directory first on ``sys.path``.

``python -m`` puts the working directory ahead of every installed package; the CLI searches it
last (:func:`eventbus.cli.base.load_app`), so a stray module there never shadows the app.
"""

import os
import sys

if sys.path and not sys.flags.safe_path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from eventbus.cli import main  # noqa: E402

main()
