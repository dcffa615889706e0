// The film strip page of a training run (gradviz/stepper/filmstrip.py inlines the bundle):
// the run's JSON from the page, and a kept step's replay opened as the sibling page the
// same save wrote.
import { mountFilmstrip } from "../src/filmstrip.js";

const root = document.querySelector(".gv-strip");
const data = JSON.parse(document.querySelector(".gv-strip-data").textContent);
mountFilmstrip(root, data, { openReplay: (_step, href) => window.location.assign(href) });
