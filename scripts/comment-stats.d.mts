// Types of comment-stats.mjs, for the test that imports it (test/arch/comments.test.ts).
export declare const AREAS: readonly string[];
export declare const GENERATED: ReadonlySet<string>;
export declare const ISSUE_CITE: RegExp;
export declare function commentsOf(src: string): { pos: number; end: number }[];
export declare function linesOf(src: string): {
  kinds: ("comment" | "code" | "blank")[];
  comments: { pos: number; end: number; text: string; line: number }[];
};
export declare function citesOf(file: string, src: string): string[];
export declare function sourcesOf(area: string): string[];
