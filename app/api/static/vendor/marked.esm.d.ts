// The part of marked 18.2.1's API the chat page uses (the package's own lib/marked.d.ts has the rest).
export interface MarkedOptions {
  async?: false;
  gfm?: boolean;
  breaks?: boolean;
}
export const marked: {
  parse(src: string, options?: MarkedOptions): string;
};
