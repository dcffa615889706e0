// A page's module tells the page's damage check (the classic script gradviz/stepper/damaged.py
// writes at the top of the body) that it started, and reports a mount that failed: a page
// whose data does not inflate or parse then says so on the page, not only in the console.

export function startPage(mountPage) {
  document.documentElement.setAttribute("data-gv-started", "");
  return mountPage().catch((error) => {
    const detail = `its data does not read back (${error})`;
    dispatchEvent(new CustomEvent("gv-damaged", { detail }));
    console.error(error);
  });
}
