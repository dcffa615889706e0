"""A replay page that says so, on the page, when its file is damaged.

A page cut short (a copy interrupted, a download stopped) ends inside its data, before the
stepper's script: nothing runs and only the title shows. A page with one character changed
in its packed data fails to inflate ("Failed to fetch" in the console only). A small
classic script at the top of the body (``CHECK_SCRIPT``) watches for both: at
DOMContentLoaded the page's last element (``END_MARKER``) must be there and the stepper's
module must have started (it sets ``data-gv-started`` on the document first); the module
reports a failed mount with a ``gv-damaged`` event (``frontend/src/damaged.js``). Any of
these puts a visible notice under the title saying what to do: save the replay again.
"""

from __future__ import annotations

import json

__all__ = ["CHECK_SCRIPT", "END_MARKER"]

END_ID = "gv-end"
END_MARKER = f'<div id="{END_ID}" hidden></div>\n'

NOTICE = (
    "This page is damaged: {why}. Its replay cannot be shown. Save it again "
    '(recording.save("replay.html") or the command line\'s -o) and open the new file.'
)

CHECK_SCRIPT = (
    "(() => {\n"
    "  const say = (why) => {\n"
    '    if (document.querySelector(".gv-damaged")) return;\n'
    '    const notice = document.createElement("p");\n'
    '    notice.className = "gv-damaged";\n'
    '    notice.setAttribute("role", "alert");\n'
    '    notice.style.cssText = "font:600 15px sans-serif;color:#fff;background:#b00020;'
    'padding:8px 12px;border-radius:4px";\n'
    f'    notice.textContent = {json.dumps(NOTICE)}.replace("{{why}}", why);\n'
    '    const title = document.querySelector("h1");\n'
    "    if (title) title.after(notice); else document.body.prepend(notice);\n"
    "  };\n"
    '  addEventListener("gv-damaged", (event) => say(event.detail));\n'
    '  document.addEventListener("DOMContentLoaded", () => {\n'
    f'    if (!document.getElementById("{END_ID}")) say("the file is cut short");\n'
    '    else if (!document.documentElement.hasAttribute("data-gv-started"))\n'
    '      say("its script was changed and does not run");\n'
    "  });\n"
    "})();\n"
)
